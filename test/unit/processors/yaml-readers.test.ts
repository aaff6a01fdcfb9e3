/**
 * parseManifestStream reads YAML through js-yaml's event stream and hands anything unusual to the
 * `yaml` package reader; these inputs take the hand-over path and must read exactly as before.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseManifestStream } from '../../../src/processors/yaml/stream.ts';

function subjectOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return `${(e as Error).message} @ ${(e as { subject?: string }).subject}`;
  }
  throw new Error('expected an error');
}

describe('YAML the fast reader leaves to the reference reader', () => {
  it('a flow mapping closed at column 0 (js-yaml refuses it, go-yaml accepts it)', () => {
    expect(parseManifestStream('a: {\n  b: 1\n}\n', 'f.yaml').documents).toEqual([{ value: { a: { b: 1 } }, line: 1 }]);
  });

  it('%TAG directives and tagged collections', () => {
    const r = parseManifestStream('%TAG !e! tag:e.com,2000:\n---\na: !e!x 1\nb: !!int 2\n', 'f.yaml');
    expect(r.documents).toEqual([{ value: { a: '1', b: 2 }, line: 3 }]);
    expect(parseManifestStream('a: !!set {x, y}\nb: !!omap [{x: 1}]\n', 'f.yaml').documents[0]?.value).toEqual({
      a: { x: null, true: null },
      b: [{ x: 1 }],
    });
  });

  it('errors keep their messages and lines', () => {
    expect(subjectOf(() => parseManifestStream(`k: v\n${'x'.repeat(1100)}: 1\n`, 'f.yaml'))).toMatch(/at most 1024 chars.* @ f\.yaml:2$/);
    expect(subjectOf(() => parseManifestStream('a: 1\nb: !!float |\n  .inf\n', 'f.yaml'))).toMatch(/as a !!float @ f\.yaml:2$/);
    expect(subjectOf(() => parseManifestStream('a: {b: *nope}\n', 'f.yaml'))).toBe('unknown alias *nope @ f.yaml:1');
  });

  it('a real manifest: block scalars, quoting and document lines', () => {
    const text = readFileSync(join(import.meta.dirname, '../../../testdata/fixtures/plain/argo-rollouts-v1.8.4/install.yaml'), 'utf8');
    const { documents, warnings } = parseManifestStream(text, 'install.yaml');
    expect(warnings).toEqual([]);
    expect(documents).toHaveLength(15);
    const lines = text.split('\n');
    for (const d of documents) expect(lines[d.line - 1]).toMatch(/^apiVersion: /);
  });
});
