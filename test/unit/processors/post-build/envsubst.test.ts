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

describe('envsubst: what the tables leave out', () => {
  const vars = { v: 'value', e: 'é', s: 'Straße', i: 'İx', empty: '' };
  const cases: Array<[string, string]> = [
    // Flux's dialect, as its Go code behaves (checked against it in test/integration/processors/post-build)
    ['$v and $$v and $${v}', '$v and $v and ${v}'],
    ['${v:+other}', 'value'], // `:+` is one more default in Flux's envsubst, not bash's alternative
    ['${missing:+other}', 'other'],
    ['${v=x}', 'value'],
    ['${empty=x}', 'x'], // `=` also replaces an empty value
    ['${#e}', '2'], // bytes, as Go's len
    ['${s:4:2}', 'ß'], // byte offsets: ß is two bytes
    ['${s^^}', 'STRAßE'], // simple case mapping, as Go's unicode.ToUpper: ß has no one-rune upper case
    ['${i,,}', 'ix'], // İ lower-cases to i (the simple mapping), not i̇
    ['${v:-2}', 'value'], // `:-` is the default operator, as in bash (a negative offset needs `${v: -2}`)
    ['${v:10}', ''],
    ['${v/#va/VA}', 'VAlue'],
    ['${v/%ue/UE}', 'valUE'],
    ['${v//l/${e}}', 'vaéue'],
    ['a\u0000${v}', 'a'], // the scanner stops at a NUL byte (Go's scanner reads it as its end-of-input rune)
  ];
  it.each(cases)('%j → %j', (input, output) => {
    expect(expand(input, vars, true)).toBe(output);
  });

  const refused: Array<[string, string]> = [
    ['${v-default}', 'missing closing brace'], // listed in envsubst's README, not parsed by it
    ['${e:é}', 'bad substitution'], // the scanner steps back by the width of the character after the colon
    ['${', 'unable to parse variable name'],
    ['${v', 'missing closing brace'],
    ['${v:=', 'unable to parse substitution within function'],
  ];
  it.each(refused)('%j does not parse: %s', (input, problem) => {
    expect(() => expand(input, vars, true)).toThrow(new RegExp(`^${problem}$`));
  });

  it('${var:?message} fails when the variable is unset or empty, naming both (Hoist; Flux substitutes the message)', () => {
    for (const input of ['${missing:?set it}', '${empty:?set it}']) {
      let err: EnvsubstError | undefined;
      try {
        expand(input, vars, true);
      } catch (e) {
        err = e as EnvsubstError;
      }
      expect(err?.kind).toBe('required');
      expect(err?.message).toMatch(/^variable "(missing|empty)" is not set: set it$/);
    }
    expect(expand('${v:?set it}', vars, true)).toBe('value');
  });

  it('a negative substring length is an error (Go slices out of range and panics)', () => {
    expect(() => expand('${v:1:-2}', vars, true)).toThrow(/the length is negative/);
  });

  it(`nesting is refused past ${MAX_NESTING} levels, whatever the length of the input`, () => {
    const nested = (n: number) => `${'${a:='.repeat(n)}x${'}'.repeat(n)}`;
    expect(expand(nested(MAX_NESTING), {}, true)).toBe('x');
    expect(() => expand(nested(MAX_NESTING + 1), {}, true)).toThrow(/nested too deep/);
    // a million levels: refused at the 33rd, no stack overflow
    expect(() => expand(nested(1_000_000), {}, true)).toThrow(/nested too deep/);
  });

  it('every byte produced is counted, arguments included', () => {
    let produced = 0;
    const counting: EnvsubstBudget = { produce: (n) => void (produced += n), allow: () => undefined, spend: () => undefined };
    expand('a${missing:=${v}}b', vars, true, counting);
    // "a", the argument "value", the result "value", "b"
    expect(produced).toBe(1 + 5 + 5 + 1);
  });
});
