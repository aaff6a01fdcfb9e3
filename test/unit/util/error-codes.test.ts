/**
 * The error codes: each layer declares its codes once (an exported `*_CODES` array in its
 * errors.ts), no code is declared by two layers, every named constant (`SourceCode.NotFound`,
 * borrowed ones too) is a declared code, docs/status.md ("Failure codes") lists exactly the
 * declared arrays, and the compiler refuses a code no layer declares.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../../..');

/** every errors.ts of the layers, as repo paths */
const vocabularyFiles = ['api', 'src'].flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name === 'errors.ts')
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort(),
);

type Module = Record<string, unknown>;
const modules: Record<string, Module> = Object.fromEntries(
  await Promise.all(vocabularyFiles.map(async (f) => [f, (await import(join(root, f))) as Module] as const)),
);

/** `ARRAY (file)` → its codes, for every exported *_CODES array */
const declared: Record<string, readonly string[]> = Object.fromEntries(
  Object.entries(modules).flatMap(([file, m]) =>
    Object.entries(m)
      .filter(([name, v]) => name.endsWith('_CODES') && Array.isArray(v))
      .map(([name, v]) => [`${name} (${file})`, v as string[]]),
  ),
);

/** the "Failure codes" table of docs/status.md: `ARRAY (file)` → codes */
function documented(): Record<string, string[]> {
  const text = readFileSync(join(root, 'docs/status.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Failure codes\n'));
  const out: Record<string, string[]> = {};
  for (const line of section.split('\n').slice(2)) {
    if (line.startsWith('## ')) break;
    const cells = line.split('|').map((c) => c.trim());
    const array = /^`([A-Z_]+_CODES)` \(([^)]+)\)$/.exec(cells[2] ?? '');
    if (array) out[`${array[1]} (${array[2]})`] = [...(cells[3] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  }
  return out;
}

describe('error codes', () => {
  it('every layer with an errors.ts declares its own codes there, in kebab-case', () => {
    // sources/image borrows the sources layer's codes: it declares none of its own
    const declaring = new Set(Object.keys(declared).map((k) => /\((.*)\)$/.exec(k)![1]));
    expect(vocabularyFiles.filter((f) => !declaring.has(f))).toEqual(['src/sources/image/errors.ts']);
    for (const [array, codes] of Object.entries(declared)) {
      expect(codes.length, array).toBeGreaterThan(0);
      for (const c of codes) expect(c, array).toMatch(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/);
    }
  });

  it('no code is declared twice, in one layer or in two', () => {
    const owners = new Map<string, string[]>();
    for (const [array, codes] of Object.entries(declared)) for (const c of codes) owners.set(c, [...(owners.get(c) ?? []), array]);
    expect([...owners].filter(([, arrays]) => arrays.length > 1)).toEqual([]);
  });

  it('every named code constant, borrowed ones included, is a declared code', () => {
    const all = new Set(Object.values(declared).flat());
    const named = Object.values(modules).flatMap((m) =>
      Object.entries(m).filter(([name, v]) => /Code$/.test(name) && name !== 'CelRegexCode' && typeof v === 'object' && v !== null),
    );
    expect(named.length).toBeGreaterThanOrEqual(9);
    for (const [name, v] of named) for (const code of Object.values(v as object)) expect(all.has(code as string), `${name}: ${String(code)}`).toBe(true);
  });

  it('docs/status.md lists exactly the declared codes, by the array that declares them', () => {
    expect(documented()).toEqual(Object.fromEntries(Object.entries(declared).map(([k, v]) => [k, [...v]])));
  });

  it("the compiler refuses a code no layer declares and another layer's code in a layer's constructor, and takes a declared one", () => {
    const fixture = join(root, 'src/util/__codes_fixture__.ts');
    const text = [
      "import { HoistError } from './errors.ts';",
      "import { sourceError } from '../sources/errors.ts';",
      "export const ok = new HoistError('m', { stage: 'fetch', code: 'cache-full', terminal: true });",
      "export const bad = new HoistError('m', { stage: 'fetch', code: 'no-such-code', terminal: true });",
      "export const wrongLayer = sourceError('m', { stage: 'fetch', code: 'helm-failed', terminal: true });",
      '',
    ].join('\n');
    const options = ts.parseJsonConfigFileContent(ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, root).options;
    const host = ts.createCompilerHost(options);
    const read = host.readFile.bind(host);
    host.readFile = (f) => (f === fixture ? text : read(f));
    const exists = host.fileExists.bind(host);
    host.fileExists = (f) => f === fixture || exists(f);
    // the fixture and every layer's errors.ts, which register their codes into HoistCode
    const program = ts.createProgram([fixture, ...vocabularyFiles.map((f) => join(root, f))], { ...options, noEmit: true }, host);
    const errors = ts
      .getPreEmitDiagnostics(program, program.getSourceFile(fixture))
      .map((d) => `${d.file!.getLineAndCharacterOfPosition(d.start!).line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0]}`);
    expect(errors).toEqual([
      `4: Type '"no-such-code"' is not assignable to type 'HoistCode'.`,
      `5: Type '"helm-failed"' is not assignable to type 'SourceCode'.`,
    ]);
  });
});
