/**
 * Conditions are written in one place: src/reconciler/status.ts, a setter per condition and
 * reason. Any other module under src/ that builds a condition object — a condition type next to
 * a condition status in one object literal — fails here, naming the file and line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONDITION_ORDER } from '../../../src/reconciler/conditions.ts';

const root = join(import.meta.dirname, '../../..');
const STATUS_MODULE = 'src/reconciler/status.ts';

/**
 * `type:` a condition type (a literal, or any expression) and `status:` 'True' | 'False' |
 * 'Unknown' as values of one object literal, either order, within one statement (no `;` between;
 * messages are template strings with `${...}` in them, so braces do not bound the literal). A type
 * declaration's `type: T;` and `status: 'True' | ...` are not values.
 */
const TYPE = `\\btype:\\s*(?:'(?:${CONDITION_ORDER.join('|')})'|[\\w.]+)\\s*,`;
const STATUS = `\\bstatus:\\s*'(?:True|False|Unknown)'\\s*[,}]`;
const LITERAL = new RegExp(`${TYPE}[^;]{0,200}?${STATUS}|${STATUS}[^;]{0,200}?${TYPE}`, 'g');

/** "file:line" of every condition literal in `text` */
function conditionLiterals(file: string, text: string): string[] {
  return [...text.matchAll(LITERAL)].map((m) => `${file}:${text.slice(0, m.index).split('\n').length}`);
}

function sources(): Array<{ file: string; text: string }> {
  return readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => {
      const path = join(e.parentPath, e.name);
      return { file: relative(root, path), text: readFileSync(path, 'utf8') };
    });
}

describe('condition writers', () => {
  it('finds a condition literal however it is written (so the scan below can fail)', () => {
    expect(conditionLiterals('a.ts', "s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: 'm' });")).toEqual(['a.ts:1']);
    expect(conditionLiterals('b.ts', "x;\ns.set({\n  type: decision.condition,\n  status: 'False',\n  reason,\n  message,\n});")).toEqual(['b.ts:3']);
    expect(conditionLiterals('c.ts', "f({ status: 'Unknown', type: 'Healthy', reason: 'Unknown', message })")).toEqual(['c.ts:1']);
    expect(conditionLiterals('t.ts', "s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${n}: ${o} objects` });")).toEqual([
      't.ts:1',
    ]);
    expect(conditionLiterals('d.ts', "setInstalled(s, 'revision 3');\nconst o = { type: 'Progressing' };")).toEqual([]);
    expect(conditionLiterals('e.ts', "interface I { type: T; status: 'True' | 'False'; }")).toEqual([]);
  });

  it(`no module under src/ but ${STATUS_MODULE} builds a condition`, () => {
    const all = sources();
    expect(all.some((s) => s.file === STATUS_MODULE)).toBe(true);
    const elsewhere = all.filter((s) => s.file !== STATUS_MODULE).flatMap((s) => conditionLiterals(s.file, s.text));
    expect(elsewhere).toEqual([]);
  });
});
