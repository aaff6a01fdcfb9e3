/**
 * Hoist's own Prometheus metrics (beside controller-runtime's in src/kube/metrics.ts), named the
 * way Flux and controller-runtime name theirs. Per-BD state is not a label of every series: the
 * condition gauge counts BundleDeployments by condition, status and reason at scrape time from the
 * informer cache, so 1,000 BDs cost a handful of series, not thousands.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import type { ObjectResult } from '../apply/result.ts';

export interface HoistMetrics {
  /** reconcile time per pipeline stage (resolve, fetch, render, apply, prune, observe, …) */
  stageDuration: Histogram<'stage'>;
  /** per object, what the applier did: created, configured, unchanged, adopted, skipped, failed */
  objectsApplied: Counter<'action'>;
  /** objects deleted because they left the bundle or the BD was deleted */
  objectsPruned: Counter<'action'>;
  rollbacks: Counter<'reason'>;
  /** source fetches by kind and how they were served (hit, proved, downloaded) */
  fetches: Counter<'kind' | 'result'>;
  /** bytes landed in the content store by source kind */
  fetchBytes: Counter<'kind'>;
  cacheEvictions: Counter<'why'>;
  /** compressed bytes of the last revision each BD saved; summed by the hoist_revision_store_bytes gauge */
  revisionBytes: Map<string, number>;
}

const STAGE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const created = new WeakMap<Registry, HoistMetrics>();

/**
 * Registers (once per registry) Hoist's metrics. `bundleDeployments` is read at scrape time for
 * the condition gauge.
 */
export function hoistMetrics(registry: Registry, bundleDeployments: () => readonly BundleDeployment[]): HoistMetrics {
  const existing = created.get(registry);
  if (existing) return existing;
  const registers = [registry];
  registerConditionGauges(registers, bundleDeployments);
  const revisionBytes = new Map<string, number>();
  new Gauge({
    name: 'hoist_revision_store_bytes',
    help: 'Compressed bytes of rendered revisions stored as Secrets (per BundleDeployment its last saved revision, summed)',
    registers,
    collect() {
      let sum = 0;
      for (const v of revisionBytes.values()) sum += v;
      this.set(sum);
    },
  });
  const m: HoistMetrics = {
    stageDuration: new Histogram({
      name: 'hoist_reconcile_stage_duration_seconds',
      help: 'Time spent per pipeline stage of a reconcile',
      labelNames: ['stage'],
      buckets: STAGE_BUCKETS,
      registers,
    }),
    objectsApplied: new Counter({ name: 'hoist_objects_applied_total', help: 'Objects applied, by what the apply did', labelNames: ['action'], registers }),
    objectsPruned: new Counter({
      name: 'hoist_objects_pruned_total',
      help: 'Objects removed because they left the bundle or their BundleDeployment was deleted, by result',
      labelNames: ['action'],
      registers,
    }),
    rollbacks: new Counter({ name: 'hoist_rollbacks_total', help: 'Revisions rolled back to the last good one, by why', labelNames: ['reason'], registers }),
    fetches: new Counter({
      name: 'hoist_source_fetches_total',
      help: 'Source fetches by source kind and how they were served: hit (from the store), proved (from the store after an access check), downloaded',
      labelNames: ['kind', 'result'],
      registers,
    }),
    fetchBytes: new Counter({
      name: 'hoist_source_fetch_bytes_total',
      help: 'Bytes of content landed in the content store, by source kind',
      labelNames: ['kind'],
      registers,
    }),
    cacheEvictions: new Counter({
      name: 'hoist_cache_evictions_total',
      help: 'Content-store entries removed, by why (unused, budget)',
      labelNames: ['why'],
      registers,
    }),
    revisionBytes,
  };
  created.set(registry, m);
  return m;
}

/** the gauges read off the cached BundleDeployments at scrape time: by condition, and how many are done */
function registerConditionGauges(registers: Registry[], bundleDeployments: () => readonly BundleDeployment[]): void {
  new Gauge({
    name: 'hoist_bundledeployments',
    help: 'BundleDeployments by condition type, status and reason',
    labelNames: ['condition', 'status', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const bd of bundleDeployments()) {
        for (const c of bd.status?.conditions ?? []) this.inc({ condition: c.type, status: c.status, reason: c.reason });
      }
    },
  });
  new Gauge({
    name: 'hoist_bundledeployments_done',
    help: 'BundleDeployments whose current generation is installed (Installed=True, Progressing=False, observedGeneration current)',
    registers,
    collect() {
      let n = 0;
      for (const bd of bundleDeployments()) {
        const cs = bd.status?.conditions ?? [];
        const installed = cs.find((c) => c.type === 'Installed')?.status === 'True';
        const progressing = cs.find((c) => c.type === 'Progressing')?.status !== 'False';
        if (installed && !progressing && bd.status?.observedGeneration === bd.metadata.generation) n++;
      }
      this.set(n);
    },
  });
}

export function recordRevisionBytes(m: HoistMetrics | undefined, bd: string, bytes: number | undefined): void {
  if (!m) return;
  if (bytes === undefined) m.revisionBytes.delete(bd);
  else m.revisionBytes.set(bd, bytes);
}

export function recordApplied(m: HoistMetrics | undefined, results: readonly ObjectResult[]): void {
  if (!m) return;
  for (const r of results) m.objectsApplied.inc({ action: r.action });
}

export function recordPruned(m: HoistMetrics | undefined, results: readonly ObjectResult[]): void {
  if (!m) return;
  for (const r of results) m.objectsPruned.inc({ action: r.action });
}

export function recordStages(m: HoistMetrics | undefined, timings: Readonly<Record<string, number>>): void {
  if (!m) return;
  for (const [stage, ms] of Object.entries(timings)) m.stageDuration.observe({ stage }, ms / 1000);
}

/**
 * Per target cluster (spec.kubeConfig; "local" for the management cluster): BundleDeployments by
 * condition, status and reason, and whether each remote cluster answers. Read at scrape time, so
 * a target costs a handful of series. Registered once per registry.
 */
export function targetMetrics(
  registry: Registry,
  bundleDeployments: () => readonly BundleDeployment[],
  remotes: () => readonly { cluster: string; reachable: boolean }[],
): void {
  if (registry.getSingleMetric('hoist_target_reachable')) return;
  const registers = [registry];
  new Gauge({
    name: 'hoist_target_bundledeployments',
    help: 'BundleDeployments by target cluster (the remote API server host, or local), condition type, status and reason',
    labelNames: ['target', 'condition', 'status', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const bd of bundleDeployments()) {
        const target = bd.status?.target?.cluster ?? (bd.spec.kubeConfig ? 'unknown' : 'local');
        for (const c of bd.status?.conditions ?? []) this.inc({ target, condition: c.type, status: c.status, reason: c.reason });
      }
    },
  });
  new Gauge({
    name: 'hoist_target_reachable',
    help: "1 while a remote target cluster's API server answers, 0 while it does not (one series per open remote target)",
    labelNames: ['target'],
    registers,
    collect() {
      this.reset();
      for (const r of remotes()) this.set({ target: r.cluster }, r.reachable ? 1 : 0);
    },
  });
}
