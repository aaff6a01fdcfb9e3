/**
 * Hoist's port of Flux's envsubst (src/processors/post-build/envsubst.ts) against envsubst's own
 * test tables: drone/envsubst's TestExpand (carried unchanged into github.com/fluxcd/pkg/envsubst),
 * fluxcd/pkg's TestExpandStrict and parse/TestParse, extracted to JSON from the Go tests
 * (testdata/post-build/README.md: origin, licenses, how they were extracted). Then the cases the
 * tables do not cover: the quirks of the Go scanner, Hoist's `?` / `:?`, and the bounds.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvsubstError, evalTemplate, MAX_NESTING, parseTemplate, type EnvsubstBudget, type Node } from '../../../../src/processors/post-build/envsubst.ts';
import { fromBytes, toBytes } from '../../../../src/processors/post-build/go-text.ts';

const DATA = join(import.meta.dirname, '../../../../testdata/post-build/envsubst');
const load = <T>(name: string): T => JSON.parse(readFileSync(join(DATA, name), 'utf8')) as T;

interface ExpandCase {
  Input: string;
  Output: string;
  Params: Record<string, string>;
  WantErr?: string | null;
}
interface GoNode {
  Value?: string;
  Param?: string;
  Name?: string;
  Args?: GoNode[] | null;
  Nodes?: GoNode[];
}

function unlimited(): EnvsubstBudget {
  return { produce: () => undefined, allow: () => undefined, spend: () => undefined };
}

/** what envsubst.Eval gives, as text: strict says whether a name missing from params is unset (Flux's strict mapper) */
function expand(input: string, params: Record<string, string>, strict: boolean, budget = unlimited()): string {
  const vars = new Map(Object.entries(params).map(([k, v]) => [toBytes(k), toBytes(v)]));
  const lookup = (name: string) => vars.get(name) ?? (strict ? undefined : '');
  return fromBytes(evalTemplate(parseTemplate(toBytes(input)), lookup, budget));
}

/** Go's tree (nested two-element lists) as Hoist's (one flat list), without offsets */
function flatten(n: GoNode): unknown[] {
  if (n.Nodes) return n.Nodes.flatMap(flatten);
  return [plain(n)];
}
function plain(n: GoNode): unknown {
  if (n.Nodes) {
    const nodes = flatten(n);
    return nodes.length === 1 ? nodes[0] : { type: 'list', nodes };
  }
  if (n.Value !== undefined && n.Param === undefined) return { type: 'text', value: n.Value };
  return { type: 'func', param: n.Param ?? '', name: n.Name ?? '', args: (n.Args ?? []).map(plain) };
}
function ours(n: Node): unknown {
  if (n.type === 'text') return { type: 'text', value: fromBytes(n.value) };
  if (n.type === 'list') return { type: 'list', nodes: n.nodes.map(ours) };
  return { type: 'func', param: fromBytes(n.param), name: n.name, args: n.args.map(ours) };
}

describe('envsubst: its own test tables', () => {
  it.each(load<ExpandCase[]>('expand.json').map((c) => [c.Input, c] as const))('TestExpand %s', (_input, c) => {
    // Flux's non-strict mapper: every variable exists (missing ones are empty)
    expect(expand(c.Input, c.Params, false)).toBe(c.Output);
  });

  it.each(load<ExpandCase[]>('strict.json').map((c) => [c.Input, c] as const))('TestExpandStrict %s', (_input, c) => {
    if (c.WantErr) {
      let err: unknown;
      try {
        expand(c.Input, c.Params, true);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(EnvsubstError);
      expect((err as EnvsubstError).kind).toBe('unset');
    } else expect(expand(c.Input, c.Params, true)).toBe(c.Output);
  });

  it.each(load<Array<{ Text: string; Node: GoNode }>>('parse.json').map((c) => [c.Text, c] as const))('TestParse %s', (_text, c) => {
    expect(ours(parseTemplate(toBytes(c.Text)))).toEqual(plain(c.Node));
  });
});
