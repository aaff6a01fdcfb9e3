/**
 * Summarises V8 .cpuprofile files (node --cpu-prof, e.g. from bench/scale.ts with
 * HOIST_SCALE_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof"): self time by function, by file
 * and by area (a package under node_modules, a folder of src/, node's own code, V8's (garbage
 * collector), (idle)), and inclusive time by function (each sample counted once per function
 * on its stack), as percentages of the busy (non-idle) time.
 *
 * `npx tsx bench/tools/cpuprofile-summary.ts [--top N] [--callers NAME] FILE|DIR ...` (--callers: the
 * stacks, six frames up, under which functions whose name or place contains NAME ran)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** a short place for a script url: src/<folder>/<file>, <package>/<file>, node:<module> */
function place(url: string): string {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const src = u.search(/\/(src|api)\//);
  if (src >= 0) return u.slice(src + 1);
  return u;
}

function area(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const p = place(url);
  if (url.includes('/node_modules/')) return p.startsWith('@') ? p.split('/').slice(0, 2).join('/') : p.split('/')[0]!;
  return p.split('/').slice(0, 2).join('/');
}

const fnKey = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${place(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;

function summarise(files: readonly string[], top: number, callersOf: string | undefined): void {
  /** for --callers: the stacks (up to 6 frames above) under which a function matching callersOf ran */
  const callers = new Map<string, number>();
  const self = { fn: new Map<string, number>(), file: new Map<string, number>(), area: new Map<string, number>() };
  const incl = new Map<string, number>();
  let total = 0;
  let idle = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const file of files) {
    const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    p.samples.forEach((id, i) => {
      const dt = (p.timeDeltas[i] ?? 0) / 1000;
      const node = byId.get(id)!;
      const f = node.callFrame;
      if (f.functionName === '(idle)') {
        idle += dt;
        return;
      }
      total += dt;
      add(self.fn, fnKey(f), dt);
      add(self.file, f.url ? place(f.url) : f.functionName, dt);
      add(self.area, area(f), dt);
      if (callersOf) {
        const chain: string[] = [];
        let hit = false;
        for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
          const k = fnKey(byId.get(at)!.callFrame);
          if (!hit && k.includes(callersOf)) hit = true;
          if (hit) chain.push(k);
          if (chain.length > 6) break;
        }
        if (hit) add(callers, chain.join(' <- '), dt);
      }
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const k = fnKey(byId.get(at)!.callFrame);
        if (seen.has(k)) continue;
        seen.add(k);
        add(incl, k, dt);
      }
    });
  }
  const show = (title: string, m: Map<string, number>) => {
    console.log(`\n## ${title}`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(`${((v / total) * 100).toFixed(1).padStart(5)} %  ${v.toFixed(0).padStart(7)} ms  ${k}`);
  };
  console.log(`${files.length} profile(s): busy ${(total / 1000).toFixed(2)} s, idle ${(idle / 1000).toFixed(2)} s`);
  show('self time by area', self.area);
  show('self time by file', self.file);
  show('self time by function', self.fn);
  show('inclusive time by function', incl);
  if (callersOf) show(`stacks of ${callersOf}`, callers);
}

const args = process.argv.slice(2);
let top = 40;
let callersOf: string | undefined;
const files: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number(args[++i]);
  else if (args[i] === '--callers') callersOf = args[++i];
  else if (statSync(args[i]!).isDirectory())
    files.push(
      ...readdirSync(args[i]!)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(args[i]!, f)),
    );
  else files.push(args[i]!);
}
summarise(files, top, callersOf);
