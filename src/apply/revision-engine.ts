/**
 * The revision level of the applier (after boxcutter's machinery/revision.go): one revision to
 * the cluster, handed over once, and one result back. In order: the install namespace and the
 * revision's hooks before any of its objects (when asked), its steps through the phased applier
 * (applier.ts, behind `RevisionApplier`) with the caller's gate between them, what the caller
 * waits for once every step is written (`settle`), then the prune of what left the bundle. A stop
 * at a gate, a failed hook or a failure of any stage is a result the caller reads, not a throw;
 * only a cancellation (CancelledError: shutdown, leadership lost, the reconcile's budget) throws,
 * so whoever reconciles next applies it again. What a result means for the status is the
 * reconciler's (src/reconciler/pipeline/apply.ts, recover.ts).
 */
import type { KubeObject } from '../kube/types.ts';
import { CancelledError, type HoistError } from '../util/errors.ts';
import type { Applier } from './applier.ts';
import type { ApplyTarget } from './plan.ts';
import type { ApplyReport, ObjectResult, StepGate } from './result.ts';

/** the phased applier as the revision engine holds it (the real Applier, or the pipeline's fake) */
export type RevisionApplier = Pick<Applier, 'apply' | 'ensureInstallNamespace'>;

export interface RevisionRequest {
  target: ApplyTarget;
  objects: readonly KubeObject[];
  signal?: AbortSignal | undefined;
  /** times the apply of the steps (the reconcile's stopwatch: stage `apply`) */
  time?: <T>(stage: 'apply', p: Promise<T>) => Promise<T>;
  /**
   * run before any object is applied: the hooks of the revision's event; a returned error is a
   * hook that failed (the revision stops there), a thrown one a hook that could not be run
   */
  hooks?: {
    run: () => Promise<HoistError | undefined>;
    /** create the install namespace first (as `helm install --create-namespace` does before pre hooks) */
    inNamespace: boolean;
  };
  /** between steps: whether the next may be applied (a new revision's phases) */
  gate?: StepGate;
  /** once every step is written, before the prune: e.g. until the watches saw the writes; a throw fails the apply */
  settle?: (report: ApplyReport) => Promise<void>;
  /** once the revision applied completely: deletes (or keeps) what left it */
  prune?: (report: ApplyReport) => Promise<ObjectResult[]>;
}

export type RevisionResult =
  /** every step applied (and pruned, when asked) */
  | { kind: 'applied'; report: ApplyReport; pruned: ObjectResult[] }
  /** a gate stopped the apply before `pending.step`; later steps were not applied */
  | { kind: 'pending'; report: ApplyReport; pending: NonNullable<ApplyReport['pending']> }
  /** a hook ran and failed: nothing of the revision's objects was applied */
  | { kind: 'hook-failed'; error: HoistError }
  /** a stage failed: `hooks` (running them failed for want of an answer), `apply` (nothing or part applied), `prune` (applied, not pruned) */
  | { kind: 'failed'; stage: 'hooks' | 'apply' | 'prune'; error: unknown; report?: ApplyReport };

/** the revision engine as the reconciler holds it */
export interface RevisionRunner {
  run(req: RevisionRequest): Promise<RevisionResult>;
}

export class RevisionEngine implements RevisionRunner {
  constructor(private readonly phases: RevisionApplier) {}

  async run(req: RevisionRequest): Promise<RevisionResult> {
    if (req.hooks) {
      const hooks = await this.runHooks(req, req.hooks);
      if (hooks) return hooks;
    }
    let report: ApplyReport;
    try {
      const applying = this.phases.apply(req.target, req.objects, { ...(req.gate ? { gate: req.gate } : {}), signal: req.signal });
      report = await (req.time ? req.time('apply', applying) : applying);
      if (report.pending) return { kind: 'pending', report, pending: report.pending };
      await req.settle?.(report);
    } catch (e) {
      return failed('apply', e);
    }
    try {
      return { kind: 'applied', report, pruned: req.prune ? await req.prune(report) : [] };
    } catch (e) {
      return failed('prune', e, report);
    }
  }

  private async runHooks(req: RevisionRequest, hooks: NonNullable<RevisionRequest['hooks']>): Promise<RevisionResult | undefined> {
    try {
      if (hooks.inNamespace) await this.phases.ensureInstallNamespace(req.target, req.objects, req.signal);
      const error = await hooks.run();
      return error ? { kind: 'hook-failed', error } : undefined;
    } catch (e) {
      return failed('hooks', e);
    }
  }
}

/** a stage's failure as a result; a cancellation is not one and goes on up */
function failed(stage: 'hooks' | 'apply' | 'prune', e: unknown, report?: ApplyReport): RevisionResult {
  if (e instanceof CancelledError) throw e;
  return { kind: 'failed', stage, error: e, ...(report ? { report } : {}) };
}
