import { describe, expect, it } from 'vitest';
import { parseDependencyList } from '../../../../src/processors/helm/dependencies.ts';

describe('parseDependencyList', () => {
  it('reads helm dependency list tables, including empty columns and statuses with spaces', () => {
    const out =
      'NAME   \tVERSION       \tREPOSITORY\tSTATUS       \n' +
      'backend\t>=1.0.0 <2.0.0\t          \tunpacked     \n' +
      'cache  \t~3.1.0        \thttps://x \twrong version\n\n';
    expect(parseDependencyList(out)).toEqual([
      { name: 'backend', version: '>=1.0.0 <2.0.0', repository: '', status: 'unpacked' },
      { name: 'cache', version: '~3.1.0', repository: 'https://x', status: 'wrong version' },
    ]);
  });
});
