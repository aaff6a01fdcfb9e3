/**
 * The phase level of the applier (after boxcutter's machinery/phases.go): the objects of one step
 * of phases.ts, in parallel with bounded concurrency, through the object level (`ObjectApplier`).
 * Presumed-new objects are created first; any that existed after all is read and decided as the
 * plan would have, and when one must be refused — or the actor may not create one — what this
 * apply call created (in this step and the steps before it) is deleted again before the refusal,
 * so a refusal still changes nothing. A step in which any object failed throws ApplyFailed
 * naming each.
 */
import { mapLimit } from '../util/concurrency.ts';
import { ApplyCode, ObjectsError } from './errors.ts';
import type { Created, ObjectApplier, ObjectCall } from './object-engine.ts';
import type { Planned } from './plan.ts';
import type { ObjectResult } from './result.ts';

/** what one step of an apply call shares beyond its objects */
export interface PhaseCall extends ObjectCall {
  /** what this apply call created so far (this step and the ones before): undone on a refusal; appended to */
  created: Created[];
  /** reads presumed-new objects that existed after all and decides them as the plan would (throws ConflictingOwner) */
  redecide(existing: readonly Planned[]): Promise<Planned[]>;
  /** a presumed create met an existing object or a refusal: the BD's next apply reads first */
  readFirst(): void;
}

/** the phase level as the applier holds it */
export interface PhaseApplier {
  apply(call: PhaseCall, batch: readonly Planned[]): Promise<ObjectResult[]>;
}

export class PhaseEngine implements PhaseApplier {
  constructor(
    private readonly objects: ObjectApplier,
    private readonly concurrency: number,
  ) {}

  async apply(call: PhaseCall, batch: readonly Planned[]): Promise<ObjectResult[]> {
    const presumed = batch.filter((p) => p.presumed);
    const others = batch.filter((p) => !p.presumed);
    const first = presumed.length > 0 ? await this.presume(call, presumed) : { results: [], decided: [] };
    const results = [...first.results, ...(await this.applyAll(call, [...others, ...first.decided]))];
    failIfAny(results);
    return results;
  }

  /** the presumed creates; those that existed after all come back read and decided, to be applied with the rest */
  private async presume(call: PhaseCall, presumed: readonly Planned[]): Promise<{ results: ObjectResult[]; decided: Planned[] }> {
    const existing: Planned[] = [];
    const results = (
      await mapLimit(presumed, this.concurrency, async (p) => {
        const r = await this.objects.apply(call, p);
        if (!r) existing.push(p);
        else if (r.action === 'created' && r.written) call.created.push({ ...p, createdUid: r.written.uid });
        return r;
      })
    ).filter((r): r is ObjectResult => r !== undefined);
    // as a refused read would have: nothing of the revision stays when the actor may not create an object
    const forbidden = results.filter((r) => r.action === 'failed' && r.forbidden);
    if (forbidden.length > 0 || existing.length > 0) call.readFirst();
    if (forbidden.length > 0) {
      await this.objects.undoCreates(call, call.created);
      throw new ObjectsError(
        ApplyCode.Forbidden,
        forbidden.map((r) => ({ subject: r.subject, message: `apply refused: ${r.message}` })),
        { terminal: false },
      );
    }
    if (existing.length === 0) return { results, decided: [] };
    try {
      return { results, decided: await call.redecide(existing.map((p) => ({ ...p, presumed: false }))) };
    } catch (e) {
      await this.objects.undoCreates(call, call.created);
      throw e;
    }
  }

  private async applyAll(call: PhaseCall, planned: readonly Planned[]): Promise<ObjectResult[]> {
    // only presumed creates come back undefined, and presume() sends those itself
    return (await mapLimit(planned, this.concurrency, (p) => this.objects.apply(call, p))).filter((r): r is ObjectResult => r !== undefined);
  }
}

function failIfAny(results: readonly ObjectResult[]): void {
  const failed = results.filter((r) => r.action === 'failed');
  if (failed.length === 0) return;
  // the API server refusing an object is a property of the bundle; retrying the same content
  // only helps for transient failures (no response, 5xx, throttling, conflicts) and missing
  // RBAC, and not at all when any object was refused
  throw new ObjectsError(
    ApplyCode.ApplyFailed,
    failed.map((f) => ({ subject: f.subject, message: f.message ?? 'failed', transient: f.transient ?? false })),
    { terminal: failed.some((f) => !f.transient) },
  );
}
