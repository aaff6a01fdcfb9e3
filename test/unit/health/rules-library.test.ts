/**
 * The shipped health rules (src/health/rules/library/) on states as each kind's controller
 * writes them: testdata/health-rules/*.yaml, one table per project, every state citing where its
 * status comes from. Each rule has at least a ready, a progressing, a failed-or-stalled, a
 * generation-lag and a deleting state, and every state is judged by that rule (verdictOf names
 * it), with the readiness and message the table says.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { LIBRARY } from '../../../src/health/rules/library/index.ts';
import { verdictOf } from '../../../src/health/verdict.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const DIR = join(import.meta.dirname, '../../../testdata/health-rules');

type Case = 'ready' | 'progressing' | 'failed' | 'stalled' | 'generation lag' | 'deleting';
interface State {
  case: Case;
  name?: string;
  want: 'Ready' | 'InProgress' | 'Failed' | 'Terminating';
  message?: string;
  source: string;
  object?: KubeObject;
  /** another state's case (the first of it) or name, and what to change in it (null removes) */
  from?: string;
  patch?: Record<string, unknown>;
}
interface Table {
  rule: string;
  states: State[];
}

function merge(base: unknown, patch: unknown): unknown {
  if (patch === null) return undefined;
  if (typeof patch !== 'object' || Array.isArray(patch) || typeof base !== 'object' || base === null || Array.isArray(base)) return structuredClone(patch);
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(patch)) {
    const m = merge(out[k], v);
    if (m === undefined) delete out[k];
    else out[k] = m;
  }
  return out;
}

function objectOf(table: Table, s: State): KubeObject {
  if (s.object) return structuredClone(s.object);
  const base = table.states.find((x) => x !== s && x.name === s.from) ?? table.states.find((x) => x !== s && x.case === s.from);
  if (!base) throw new Error(`${table.rule}: state ${s.name ?? s.case} is from ${s.from}, which is not in the table`);
  return merge(objectOf(table, base), s.patch ?? {}) as KubeObject;
}

const tables: Array<{ file: string; table: Table }> = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) => (parse(readFileSync(join(DIR, file), 'utf8')) as Table[]).map((table) => ({ file, table })));

describe.each(tables)('$file: $table.rule', ({ table }) => {
  it.each(table.states.map((s) => ({ label: `${s.case}${s.name ? `: ${s.name}` : ''}`, s })))('$label', ({ s }) => {
    expect(s.source, 'every state cites where its status comes from').toBeTruthy();
    const v = verdictOf(objectOf(table, s));
    expect(v.rule).toBe(table.rule);
    expect(v.readiness, v.message).toBe(s.want);
    if (s.message !== undefined) expect(v.message).toBe(s.message);
    if (s.want === 'Ready') expect(v.message).toBeUndefined();
  });
});

/** kinds no controller reconciles: nothing to progress or fail (fluxcd/source-controller/docs/spec/v1/helmrepositories.md, "Helm OCI repository") */
const STATIC = new Set(['builtin:source.toolkit.fluxcd.io/HelmRepository:oci']);

describe('every shipped rule', () => {
  const byRule = new Map(tables.map(({ table }) => [table.rule, table]));
  it.each(LIBRARY.map((r) => `builtin:${r.name}`))('%s is tested on ready, progressing, failed or stalled, generation lag and deleting', (id) => {
    const table = byRule.get(id);
    expect(table, `a table in testdata/health-rules for ${id}`).toBeDefined();
    const cases = new Set(table!.states.map((s) => (s.case === 'stalled' ? 'failed' : s.case)));
    const need = STATIC.has(id) ? ['ready', 'generation lag', 'deleting'] : ['ready', 'progressing', 'failed', 'generation lag', 'deleting'];
    expect([...cases].sort()).toEqual(expect.arrayContaining(need));
  });
  it('no table names a rule the library does not ship', () => {
    const shipped = new Set(LIBRARY.map((r) => `builtin:${r.name}`));
    expect(tables.map(({ table }) => table.rule).filter((r) => !shipped.has(r))).toEqual([]);
  });
});
