#!/usr/bin/env node
// Error codes and reasons are named from their layer's vocabulary module (src/**/errors.ts), never
// written as string literals elsewhere, and no code branches on an error's message or name text
// (docs/decisions.md "Error vocabulary"). Run by `npm run lint`.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const src = join(root, 'src');

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? walk(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

const files = walk(src);
const isVocabulary = (f) => f.endsWith('/errors.ts');
// every code value a vocabulary declares ("Name: 'value'," inside an `as const` object)
const codes = new Set();
for (const f of files.filter(isVocabulary)) {
  for (const m of readFileSync(f, 'utf8').matchAll(/^\s+[A-Z]\w*: '([a-z0-9]+(?:-[a-z0-9]+)*)',$/gm)) codes.add(m[1]);
}
const REASONS =
  /reason: '(ResolveFailed|FetchFailed|ProcessFailed|ApplyFailed|InvalidSpec|Aborted|ConflictingOwner|InvalidConfig|PruneFailed|UnpackFailed|UnsafeCRDUpgrade|VerificationFailed)'/;
const rules = [
  { re: /\bcode: ['`]/, why: 'a code written as a literal: name it from the layer vocabulary (errors.ts)' },
  {
    re: /\b(e|err|error|cause)\.(message|name)\s*(===|!==)|\b(e|err|error|cause)\.(message|name)\.(startsWith|endsWith|includes|match)\(|\.test\((e|err|error)\.(message|name)\)/,
    why: 'a branch on error text: branch on the error type or code',
  },
];
const problems = [];
for (const f of files.filter((x) => !isVocabulary(x))) {
  const lines = readFileSync(f, 'utf8').split('\n');
  lines.forEach((line, i) => {
    const where = `${relative(root, f)}:${i + 1}`;
    if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
    for (const r of rules) if (r.re.test(line)) problems.push(`${where}: ${r.why}`);
    const context = lines.slice(Math.max(0, i - 3), i + 3).join('\n');
    if (REASONS.test(line) && !/\btype: '/.test(line) && /\bcode\b|HoistError|Cancel/.test(context))
      problems.push(`${where}: an error reason written as a literal: it follows the stage (reasonFor) or is a FailureReason`);
    for (const m of line.matchAll(/'([a-z0-9]+(?:-[a-z0-9]+)+)'/g)) {
      if (!codes.has(m[1]) || !/Error\(|\bfail\(|\bmake\(|\bbad\(|code/.test(line)) continue;
      // a comparison is about a code only when its other side is one (HTTP status classes share words)
      const before = line.slice(0, m.index);
      const compared = /(===|!==)\s*$/.test(before);
      if (compared && !/\.code\s*(===|!==)\s*$/.test(before)) continue;
      problems.push(`${where}: code '${m[1]}' written as a literal: name it from the layer vocabulary`);
    }
  });
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`vocabulary: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`vocabulary: ${files.length} files name codes and reasons from ${files.filter(isVocabulary).length} vocabulary modules (${codes.size} codes)`);
