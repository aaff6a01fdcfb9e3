/**
 * The condition reasons of the status contract: what the code can set (REASONS, which types every
 * set() call against) is exactly what docs/status.md documents, and every reason is set somewhere.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REASONS } from '../../../src/reconciler/conditions.ts';

const root = join(import.meta.dirname, '../../..');

/** condition type → reasons, from the table in docs/status.md */
function documented(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let type = '';
  for (const line of readFileSync(join(root, 'docs/status.md'), 'utf8').split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !/^`(True|False|Unknown)` \/ /.test(cells[2] ?? '')) continue;
    type = cells[1]?.replace(/`/g, '') || type;
    const reasons = [...((cells[2] ?? '').split(' / ')[1] ?? '').matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]!);
    (out[type] ??= []).push(...reasons);
  }
  return out;
}

function sources(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

describe('condition reasons', () => {
  it('docs/status.md documents exactly the reasons the code can set, per condition type', () => {
    const docs = documented();
    const code = Object.fromEntries(Object.entries(REASONS).map(([t, rs]) => [t, [...rs].sort()]));
    expect(Object.fromEntries(Object.entries(docs).map(([t, rs]) => [t, [...new Set(rs)].sort()]))).toEqual(code);
  });

  it('every reason is set by some code path (a literal in the reconciler)', () => {
    const text = sources(join(root, 'src/reconciler'));
    const unreachable = Object.entries(REASONS).flatMap(([type, rs]) => rs.filter((r) => !text.includes(`'${r}'`)).map((r) => `${type}/${r}`));
    expect(unreachable).toEqual([]);
  });
});
