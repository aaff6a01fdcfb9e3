/**
 * Summarises a V8 heap snapshot (node --heapsnapshot-signal, writeHeapSnapshot): live bytes by
 * constructor (self and retained: what would be freed with the objects of that name, from the
 * dominator tree), and for the names given with --holders, which owners (their constructor and
 * the edge) hold the most retained bytes of them.
 *
 * `npx tsx bench/tools/heapsnapshot-summary.ts [--top N] [--holders NAME[,NAME]] [--each NAME[,NAME]] FILE`
 * (--each: every object of that name, its retained bytes and those of its properties, two levels
 * down)
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }; node_count: number };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface Graph {
  count: number;
  name: string[];
  type: string[];
  self: Float64Array;
  firstEdge: Uint32Array;
  edgeTo: Uint32Array;
  edgeName: string[];
}

function load(file: string): Graph {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const N = nf.length;
  const E = ef.length;
  const [fType, fName, fSelf, fEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number, number];
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f)) as [number, number, number];
  const count = s.nodes.length / N;
  const g: Graph = {
    count,
    name: new Array<string>(count),
    type: new Array<string>(count),
    self: new Float64Array(count),
    firstEdge: new Uint32Array(count + 1),
    edgeTo: new Uint32Array(s.edges.length / E),
    edgeName: new Array<string>(s.edges.length / E),
  };
  let e = 0;
  let kept = 0;
  for (let i = 0; i < count; i++) {
    const t = nodeTypes[s.nodes[i * N + fType]!]!;
    g.type[i] = t;
    const raw = s.strings[s.nodes[i * N + fName]!]!;
    g.name[i] = t === 'object' || t === 'closure' || t === 'native' ? raw : `(${t})`;
    g.self[i] = s.nodes[i * N + fSelf]!;
    g.firstEdge[i] = kept;
    const n = s.nodes[i * N + fEdges]!;
    for (let k = 0; k < n; k++, e++) {
      const et = edgeTypes[s.edges[e * E + eType]!]!;
      // weak references do not keep anything alive
      if (et === 'weak' || et === 'shortcut') continue;
      g.edgeTo[kept] = s.edges[e * E + eTo]! / N;
      const nm = s.edges[e * E + eName]!;
      g.edgeName[kept] = et === 'element' || et === 'hidden' ? `[${nm}]` : s.strings[nm]!;
      kept++;
    }
  }
  g.firstEdge[count] = kept;
  return g;
}

/** immediate dominators from node 0 (Cooper, Harvey and Kennedy's iterative algorithm over a reverse postorder) */
export function dominators(g: Graph): Int32Array {
  const order = new Int32Array(g.count).fill(-1);
  const post: number[] = [];
  const stack: number[] = [0];
  const next = new Uint32Array(g.count);
  order[0] = -2;
  for (let i = 0; i < g.count; i++) next[i] = g.firstEdge[i]!;
  while (stack.length) {
    const v = stack[stack.length - 1]!;
    if (next[v]! < g.firstEdge[v + 1]!) {
      const w = g.edgeTo[next[v]!++]!;
      if (order[w] === -1) {
        order[w] = -2;
        stack.push(w);
      }
    } else {
      stack.pop();
      order[v] = post.length;
      post.push(v);
    }
  }
  const preds: number[][] = Array.from({ length: g.count }, () => []);
  for (let v = 0; v < g.count; v++) {
    if (order[v]! < 0) continue;
    for (let k = g.firstEdge[v]!; k < g.firstEdge[v + 1]!; k++) preds[g.edgeTo[k]!]!.push(v);
  }
  const idom = new Int32Array(g.count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let i = post.length - 2; i >= 0; i--) {
      const v = post[i]!;
      let d = -1;
      for (const p of preds[v]!) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  return idom;
}

function main(): void {
  const args = process.argv.slice(2);
  let top = 30;
  let holders: string[] = [];
  let each: string[] = [];
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--top') top = Number(args[++i]);
    else if (args[i] === '--holders') holders = args[++i]!.split(',');
    else if (args[i] === '--each') each = args[++i]!.split(',');
    else files.push(args[i]!);
  }
  const g = load(files[0]!);
  const idom = dominators(g);
  // retained = self + what each node dominates: children after parents in the dominator tree
  const retained = Float64Array.from(g.self);
  const depth = new Int32Array(g.count).fill(-1);
  const depthOf = (v: number): number => {
    const path: number[] = [];
    while (depth[v] === -1 && v !== 0 && idom[v] !== -1) {
      path.push(v);
      v = idom[v]!;
    }
    let d = v === 0 ? 0 : depth[v]!;
    for (let i = path.length - 1; i >= 0; i--) depth[path[i]!] = ++d;
    return depth[path[0] ?? v]!;
  };
  const live = [...Array(g.count).keys()].filter((v) => v === 0 || idom[v] !== -1);
  for (const v of live) depthOf(v);
  live.sort((a, b) => depth[b]! - depth[a]!);
  for (const v of live) if (v !== 0) retained[idom[v]!]! += retained[v]!;
  const total = live.reduce((a, v) => a + g.self[v]!, 0);
  const mib = (b: number) => (b / 1048576).toFixed(2);
  console.log(`live: ${mib(total)} MiB in ${live.length} objects`);
  // by name: self of all, retained of those not dominated by another of the same name
  const byName = new Map<string, { count: number; self: number; retained: number }>();
  for (const v of live) {
    const r = byName.get(g.name[v]!) ?? { count: 0, self: 0, retained: 0 };
    r.count++;
    r.self += g.self[v]!;
    // outermost: no dominator up to the root has the same name
    let up = v === 0 ? -1 : idom[v]!;
    while (up !== -1 && g.name[up] !== g.name[v]) up = up === 0 ? -1 : idom[up]!;
    if (up === -1) r.retained += retained[v]!;
    byName.set(g.name[v]!, r);
  }
  console.log(`\n${'self MiB'.padStart(9)} ${'retained'.padStart(9)} ${'count'.padStart(9)}  name`);
  for (const [name, r] of [...byName].sort((a, b) => b[1].self - a[1].self).slice(0, top))
    console.log(`${mib(r.self).padStart(9)} ${mib(r.retained).padStart(9)} ${String(r.count).padStart(9)}  ${name.slice(0, 100)}`);
  console.log(`\nby retained (outermost of each name):`);
  for (const [name, r] of [...byName].sort((a, b) => b[1].retained - a[1].retained).slice(0, top))
    console.log(`${mib(r.self).padStart(9)} ${mib(r.retained).padStart(9)} ${String(r.count).padStart(9)}  ${name.slice(0, 100)}`);
  // the properties of v that it dominates, largest first, `levels` deep
  const children = (v: number, levels: number, indent: string): void => {
    const kids: { edge: string; to: number }[] = [];
    for (let k = g.firstEdge[v]!; k < g.firstEdge[v + 1]!; k++) {
      const to = g.edgeTo[k]!;
      if (idom[to] === v) kids.push({ edge: g.edgeName[k]!, to });
    }
    kids.sort((a, b) => retained[b.to]! - retained[a.to]!);
    for (const c of kids.slice(0, 6)) {
      if (retained[c.to]! < 65536) break;
      console.log(`${indent}${mib(retained[c.to]!).padStart(9)}  .${c.edge} (${g.name[c.to]!.slice(0, 40)})`);
      if (levels > 1) children(c.to, levels - 1, `${indent}  `);
    }
  };
  for (const name of each) {
    console.log(`\neach ${name} (retained MiB, then what it holds):`);
    const vs = live.filter((v) => g.name[v] === name).sort((a, b) => retained[b]! - retained[a]!);
    for (const v of vs.slice(0, top)) {
      if (retained[v]! < 65536) break;
      console.log(`${mib(retained[v]!).padStart(9)}  ${name}`);
      children(v, 3, '  ');
    }
  }
  if (holders.length) {
    // a direct retainer of each object of a --holders name: the first edge to it, from an object of another name
    const wanted = new Set(holders);
    const retainer = new Map<number, string>();
    for (let from = 0; from < g.count; from++)
      for (let k = g.firstEdge[from]!; k < g.firstEdge[from + 1]!; k++) {
        const to = g.edgeTo[k]!;
        if (!wanted.has(g.name[to]!) || retainer.has(to) || g.name[from] === g.name[to]) continue;
        const edge = g.edgeName[k]!;
        retainer.set(to, `${g.name[from]!.slice(0, 60)} .${edge.startsWith('[') ? '[]' : edge}`);
      }
    for (const h of holders) {
      const by = new Map<string, { n: number; bytes: number }>();
      for (const v of live) {
        if (g.name[v] !== h) continue;
        const key = `${retainer.get(v) ?? '?'}  (dominated by ${g.name[idom[v]!]!.slice(0, 40)})`;
        const r = by.get(key) ?? { n: 0, bytes: 0 };
        r.n++;
        r.bytes += retained[v]!;
        by.set(key, r);
      }
      console.log(`\nholders of ${h} (a direct retainer and its edge; retained MiB, count):`);
      for (const [k, r] of [...by].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 15))
        console.log(`${mib(r.bytes).padStart(9)} ${String(r.n).padStart(8)}  ${k}`);
    }
  }
}

main();
