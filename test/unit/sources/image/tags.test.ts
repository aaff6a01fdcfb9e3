/** The tag list's `Link: <…>; rel="next"` header (distribution spec pagination). */
import { describe, expect, it } from 'vitest';
import { nextLink } from '../../../../src/sources/image/tags.ts';

describe('nextLink', () => {
  it.each([
    ['</v2/apps/web/tags/list?n=2&last=b>; rel="next"', '/v2/apps/web/tags/list?n=2&last=b'],
    ['<https://r.example/v2/a/tags/list?last=x>; rel=next', 'https://r.example/v2/a/tags/list?last=x'],
    ['</v2/a/tags/list?last=p>; rel="prev", </v2/a/tags/list?last=n>; rel="next"', '/v2/a/tags/list?last=n'],
    ['</v2/a/tags/list?last=p>; rel="prev"', undefined],
    [undefined, undefined],
    ['garbage', undefined],
  ])('%j → %j', (header, next) => {
    expect(nextLink(header)).toBe(next);
  });
  it('reads a repeated header', () => {
    expect(nextLink(['</x>; rel="prev"', '</y>; rel="next"'])).toBe('/y');
  });
});
