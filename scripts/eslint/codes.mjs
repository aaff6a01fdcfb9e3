/**
 * hoist/declared-codes: an error code written as a string literal — the value of a `code`
 * property, a side of a comparison with `.code`, a `case` of a `switch` on `.code`, the argument of
 * `err.is(…)` — must be one some layer declares (`export const X_CODES = [...] as const` in an
 * errors.ts under src/ or api/). The compiler refuses such a code where it is typed (HoistCode);
 * this rule also sees it where it is not, and shows it in the editor without a type check.
 * Only literals in the form codes take (lowercase, kebab-case) are read: errno codes (`EPERM`) and
 * library codes are not Hoist's.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { checked, rootOf } from './layers.mjs';
import { repoPath } from './imports.mjs';

const CODE_FORM = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** errors.ts files under `dir` */
function vocabularyFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) =>
    e.name === 'node_modules' || e.name.startsWith('.')
      ? []
      : e.isDirectory()
        ? vocabularyFiles(join(dir, e.name))
        : e.name === 'errors.ts'
          ? [join(dir, e.name)]
          : [],
  );
}

/** the string elements of every exported `*_CODES = [...] as const` in a source text */
export function declaredIn(text) {
  const sf = ts.createSourceFile('errors.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st) || !st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    for (const d of st.declarationList.declarations) {
      if (!ts.isIdentifier(d.name) || !/_CODES$/.test(d.name.text) || !d.initializer) continue;
      const init = ts.isAsExpression(d.initializer) ? d.initializer.expression : d.initializer;
      if (!ts.isArrayLiteralExpression(init)) continue;
      for (const el of init.elements) if (ts.isStringLiteral(el)) out.push({ code: el.text, array: d.name.text });
    }
  }
  return out;
}

/** @type {Map<string, { at: number, codes: Map<string, string> }>} root → code → where it is declared */
const cache = new Map();
const FRESH_MS = 2000;
/** @type {Map<string, { mtimeMs: number, found: { code: string, array: string }[] }>} */
const parsed = new Map();

/** every declared code under `root`, with the array and file that declare it */
export function declaredCodes(root) {
  const hit = cache.get(root);
  if (hit && Date.now() - hit.at < FRESH_MS) return hit.codes;
  const codes = new Map();
  for (const file of [...vocabularyFiles(join(root, 'api')), ...vocabularyFiles(join(root, 'src'))]) {
    const mtimeMs = statSync(file).mtimeMs;
    let p = parsed.get(file);
    if (!p || p.mtimeMs !== mtimeMs) parsed.set(file, (p = { mtimeMs, found: declaredIn(readFileSync(file, 'utf8')) }));
    for (const { code, array } of p.found) if (!codes.has(code)) codes.set(code, `${array} in ${repoPath(root, file)}`);
  }
  cache.set(root, { at: Date.now(), codes });
  return codes;
}

const isCodeMember = (n) => n?.type === 'MemberExpression' && !n.computed && n.property.type === 'Identifier' && n.property.name === 'code';
const stringLiteral = (n) => (n?.type === 'Literal' && typeof n.value === 'string' ? n : undefined);

/** @type {import('eslint').Rule.RuleModule} */
export const declaredCodesRule = {
  meta: {
    type: 'problem',
    docs: { description: "an error code literal is one a layer's errors.ts declares" },
    schema: [],
    messages: { undeclared: "code '{{code}}' is declared by no layer: add it to a layer's *_CODES in its errors.ts, or name a declared one" },
  },
  create(context) {
    const root = rootOf(context);
    if (!checked(root, context.filename)) return {};
    const check = (lit) => {
      if (!lit || !CODE_FORM.test(lit.value) || declaredCodes(root).has(lit.value)) return;
      context.report({ node: lit, messageId: 'undeclared', data: { code: lit.value } });
    };
    return {
      Property(node) {
        if (node.parent.type !== 'ObjectExpression' || node.computed) return;
        const key = node.key.type === 'Identifier' ? node.key.name : node.key.type === 'Literal' ? node.key.value : undefined;
        if (key === 'code') check(stringLiteral(node.value));
      },
      BinaryExpression(node) {
        if (!['===', '!==', '==', '!='].includes(node.operator)) return;
        if (isCodeMember(node.left)) check(stringLiteral(node.right));
        if (isCodeMember(node.right)) check(stringLiteral(node.left));
      },
      SwitchCase(node) {
        if (isCodeMember(node.parent.discriminant)) check(stringLiteral(node.test));
      },
      CallExpression(node) {
        const c = node.callee;
        if (c.type === 'MemberExpression' && !c.computed && c.property.type === 'Identifier' && c.property.name === 'is' && node.arguments.length === 1)
          check(stringLiteral(node.arguments[0]));
      },
    };
  },
};
