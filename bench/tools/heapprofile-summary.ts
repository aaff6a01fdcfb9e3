/**
 * Summarises V8 sampling heap profiles (bench/tools/gc-alloc-preload.ts's alloc-<pid>.heapprofile,
 * which counts objects already collected, or node --heap-prof's): bytes allocated by function
 * (self), by area (a package under node_modules, a folder of src/, node's own code) and inclusive
 * by function (each sample counted once per function on its stack), in MiB and as a share of all.
 *
 * `npx tsx bench/tools/heapprofile-summary.ts [--top N] [--callers NAME] FILE ...` (--callers: the
 * stacks, six frames up, under which functions whose name or place contains NAME allocated)
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** a short place for a script url: src/<folder>/<file>, <package>/<file>, node:<module> */
function place(url: string): string {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const src = u.search(/\/(src|api|bench)\//);
  if (src >= 0) return u.slice(src + 1);
  return u;
}

function area(url: string): string {
  const p = place(url);
  if (!p) return '(native)';
  if (p.startsWith('node:')) return p.split('/')[0]!;
  const parts = p.split('/');
  if (p.startsWith('src/') || p.startsWith('api/') || p.startsWith('bench/')) return parts.slice(0, 2).join('/');
  return p.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

const frameName = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${place(f.url)}:${f.lineNumber + 1}`;

export interface HeapSummary {
  totalMiB: number;
  self: Array<[string, number]>;
  inclusive: Array<[string, number]>;
  areas: Array<[string, number]>;
  callers: Array<[string, number]>;
}

export function summarise(profiles: readonly HeapNode[], top: number, callers?: string): HeapSummary {
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const areas = new Map<string, number>();
  const under = new Map<string, number>();
  let total = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const walk = (n: HeapNode, stack: CallFrame[]) => {
    stack.push(n.callFrame);
    if (n.selfSize > 0) {
      total += n.selfSize;
      add(self, frameName(n.callFrame), n.selfSize);
      add(areas, area(n.callFrame.url), n.selfSize);
      for (const name of new Set(stack.map(frameName))) add(incl, name, n.selfSize);
      if (callers) {
        const at = stack.findLastIndex((f) => frameName(f).includes(callers));
        if (at >= 0)
          add(
            under,
            stack
              .slice(Math.max(0, at - 6), at + 1)
              .map(frameName)
              .join(' < '),
            n.selfSize,
          );
      }
    }
    for (const c of n.children) walk(c, stack);
    stack.pop();
  };
  for (const p of profiles) walk(p, []);
  const mib = (v: number) => Math.round((v / 2 ** 20) * 10) / 10;
  const sorted = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, mib(v)] as [string, number]);
  return { totalMiB: mib(total), self: sorted(self), inclusive: sorted(incl), areas: sorted(areas), callers: sorted(under) };
}

function main(argv: string[]): void {
  let top = 30;
  let callers: string | undefined;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--top') top = Number(argv[++i]);
    else if (argv[i] === '--callers') callers = argv[++i];
    else files.push(argv[i]!);
  }
  const heads = files.map((f) => (JSON.parse(readFileSync(f, 'utf8')) as { head: HeapNode }).head);
  const s = summarise(heads, top, callers);
  const pct = (v: number) => `${((v / s.totalMiB) * 100).toFixed(1)}%`;
  const table = (title: string, rows: Array<[string, number]>) => {
    console.log(`\n${title}`);
    for (const [k, v] of rows) console.log(`${String(v).padStart(9)} MiB ${pct(v).padStart(6)}  ${k}`);
  };
  console.log(`allocated: ${s.totalMiB} MiB (sampled)`);
  table('by area (self)', s.areas);
  table('by function (self)', s.self);
  table('by function (inclusive)', s.inclusive);
  if (callers) table(`stacks under ${callers}`, s.callers);
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('heapprofile-summary.ts')) main(process.argv.slice(2));
