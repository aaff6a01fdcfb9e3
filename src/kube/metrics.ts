/**
 * Prometheus metrics with controller-runtime's names, so existing dashboards and alerts work.
 * Metrics are created once per registry and shared by every queue and controller registered on
 * it (they differ by the name/controller label).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface WorkQueueMetrics {
  depth: Gauge<'name'>;
  adds: Counter<'name'>;
  queueDuration: Histogram<'name'>;
  workDuration: Histogram<'name'>;
  retries: Counter<'name'>;
  unfinishedWork: Gauge<'name'>;
  longestRunning: Gauge<'name'>;
}

export interface ControllerMetrics {
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  terminalReconcileErrors: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  activeWorkers: Gauge<'controller'>;
  maxConcurrentReconciles: Gauge<'controller'>;
}

/** Sources of the gauges that are computed at scrape time. */
export interface InFlightSource {
  /** start times (performance.now()) of items being processed */
  inFlightStarts(): Iterable<number>;
}

// queue/controller name → its in-flight source, per registry, for the scrape-time gauges
const inFlight = new WeakMap<Registry, Map<string, InFlightSource>>();
const queueMetrics = new WeakMap<Registry, WorkQueueMetrics>();
const controllerMetrics = new WeakMap<Registry, ControllerMetrics>();

// controller-runtime's buckets: exponential from 1µs (queue) and 5ms…60s (reconcile)
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10,
  15, 20, 25, 30, 40, 50, 60,
];

export function workQueueMetrics(registry: Registry): WorkQueueMetrics {
  let m = queueMetrics.get(registry);
  if (m) return m;
  const sources = new Map<string, InFlightSource>();
  inFlight.set(registry, sources);
  const registers = [registry];
  m = {
    depth: new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers }),
    adds: new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers }),
    queueDuration: new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    }),
    workDuration: new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    }),
    retries: new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers }),
    unfinishedWork: new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
      labelNames: ['name'],
      registers,
      collect() {
        const now = performance.now();
        for (const [name, src] of sources) {
          let total = 0;
          for (const s of src.inFlightStarts()) total += now - s;
          this.set({ name }, total / 1000);
        }
      },
    }),
    longestRunning: new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'],
      registers,
      collect() {
        const now = performance.now();
        for (const [name, src] of sources) {
          let oldest = now;
          for (const s of src.inFlightStarts()) oldest = Math.min(oldest, s);
          this.set({ name }, (now - oldest) / 1000);
        }
      },
    }),
  };
  queueMetrics.set(registry, m);
  return m;
}

/** makes a queue's in-flight items visible to the scrape-time gauges */
export function registerInFlight(registry: Registry, name: string, source: InFlightSource): void {
  workQueueMetrics(registry);
  inFlight.get(registry)?.set(name, source);
}

export function controllerRuntimeMetrics(registry: Registry): ControllerMetrics {
  let m = controllerMetrics.get(registry);
  if (m) return m;
  const registers = [registry];
  m = {
    reconcileTotal: new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    terminalReconcileErrors: new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    }),
    reconcileTime: new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    }),
    activeWorkers: new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    }),
    maxConcurrentReconciles: new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    }),
  };
  controllerMetrics.set(registry, m);
  return m;
}
