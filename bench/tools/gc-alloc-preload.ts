/**
 * Loaded into a benchmarked process (`node --import <dist>/bench/tools/gc-alloc-preload.js
 * --diagnostic-dir=DIR …`, e.g. through $HOIST_SCALE_NODE_FLAGS) to see where its bytes go, not
 * only its CPU: every garbage collection by kind with its pause (perf_hooks' gc entries), and V8's
 * sampling heap profiler over the whole run *including objects already collected* (node's
 * --heap-prof keeps only what is live at exit, which hides the short-lived garbage that costs the
 * young-generation collections). At exit it writes `DIR/gc-<pid>.json` (the collections, with
 * their times since the process started) and `DIR/alloc-<pid>.heapprofile` (read it with
 * bench/tools/heapprofile-summary.ts).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { PerformanceObserver, constants, performance, type PerformanceEntry } from 'node:perf_hooks';

const KIND: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** the --diagnostic-dir the process was started with, else the working directory */
function diagnosticDir(): string {
  const flag = process.execArgv.find((a) => a.startsWith('--diagnostic-dir='));
  return flag ? flag.slice('--diagnostic-dir='.length) : process.cwd();
}

const dir = diagnosticDir();
/** [ms since start, kind, pause ms] per collection: compact, a wave has thousands */
const collections: Array<[number, string, number]> = [];
function record(entries: readonly PerformanceEntry[]): void {
  for (const e of entries) {
    const kind = ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1) as number;
    collections.push([Math.round(e.startTime), KIND[kind] ?? String(kind), Math.round(e.duration * 1000) / 1000]);
  }
}
const observer = new PerformanceObserver((list) => record(list.getEntries()));
observer.observe({ entryTypes: ['gc'] });

const session = new Session();
session.connect();
// every 32 KiB allocated on average (V8's default is 512 KiB: too coarse for 4-object bundles)
session.post('HeapProfiler.startSampling', {
  samplingInterval: 32 * 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});

let written = false;
function write(): void {
  if (written) return;
  written = true;
  // the entries not delivered yet (the observer's callback runs later, and exit does not wait)
  record(observer.takeRecords());
  observer.disconnect();
  const byKind: Record<string, { count: number; pauseMs: number }> = {};
  for (const [, kind, ms] of collections) {
    const k = (byKind[kind] ??= { count: 0, pauseMs: 0 });
    k.count++;
    k.pauseMs += ms;
  }
  for (const k of Object.values(byKind)) k.pauseMs = Math.round(k.pauseMs);
  writeFileSync(
    path.join(dir, `gc-${process.pid}.json`),
    JSON.stringify({ pid: process.pid, argv: process.argv.slice(1), uptimeMs: Math.round(performance.now()), byKind, collections }),
  );
  // a same-thread session answers synchronously: the profile is in hand before exit goes on
  session.post('HeapProfiler.stopSampling', (err, res) => {
    if (!err) writeFileSync(path.join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(res.profile));
  });
}
process.once('exit', write);
