import { describe, expect, it } from 'vitest';
import { scrubPaths } from '../../../../src/processors/tree-paths.ts';
import { schemaReferenceProblems } from '../../../../src/processors/helm/schema-refs.ts';

describe('schemaReferenceProblems', () => {
  it('allows references inside the schema and the standard meta-schemas', () => {
    expect(
      schemaReferenceProblems({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: 'https://example.com/values',
        $defs: { s: { type: 'string' } },
        properties: { a: { $ref: '#/$defs/s' }, $ref: { type: 'object' }, b: { $dynamicRef: '#meta' } },
      }),
    ).toEqual([]);
    expect(schemaReferenceProblems({ $schema: 'http://json-schema.org/draft-07/schema#' })).toEqual([]);
  });

  it('names every reference out of the schema, with where it is', () => {
    expect(
      schemaReferenceProblems({
        $schema: 'file:///dev/zero',
        properties: { a: { $ref: 'file:///etc/hostname' }, b: { items: [{ $ref: 'other.json#/x' }] }, c: { $recursiveRef: 'https://evil.example/s' } },
      }),
    ).toEqual([
      '$schema at /: "file:///dev/zero"',
      '$ref at /properties/a: "file:///etc/hostname"',
      '$ref at /properties/b/items/0: "other.json#/x"',
      '$recursiveRef at /properties/c: "https://evil.example/s"',
    ]);
  });
});

describe('scrubPaths', () => {
  it("replaces the tree and helm home in helm's text, longest first", () => {
    const text =
      'walk.go:75: found symbolic link in path: /var/cache/hoist/entries/ab12/content/chart/files/p resolves to /var/cache/hoist/entries/ab12/content/chart/files/real\nopen /tmp/hoist-helm-x1/values.json: denied';
    expect(
      scrubPaths(text, [
        ['/tmp/hoist-helm-x1', '<helm-home>'],
        ['/var/cache/hoist/entries/ab12/content', '.'],
      ]),
    ).toBe('walk.go:75: found symbolic link in path: chart/files/p resolves to chart/files/real\nopen <helm-home>/values.json: denied');
  });
});
