#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so the repository works without a build step.
// Kept to syntax every Node since 12 parses, so an old Node gets one clear line, not a stack trace.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`hoist needs Node >= 24; found ${process.versions.node} — run it with npm run hoist -- …\n`);
  process.exit(1);
}
const root = fileURLToPath(new URL('..', import.meta.url));
const tsx = fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url));
const r = spawnSync(process.execPath, [tsx, `${root}src/cli/main.ts`, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
