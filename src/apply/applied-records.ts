/**
 * What the applier remembers of each object it applied, per BundleDeployment: the desired hash
 * and the live fingerprint right after the write, so an object whose desired state and live
 * fingerprint are as they were is not sent again; the uid it wrote (prune and uninstall delete
 * only that object); the driftIgnore'd fields it gave up. Shared by the object engine (which
 * writes records) and the applier (which skips, adopts and digests by them).
 */
import type { KubeObject } from '../kube/types.ts';
import { hashOf } from '../util/hash.ts';
import { liveFingerprint, liveMetaOf, type LiveIndex, type LiveMeta } from './live-index.ts';
import { objectId } from './object-id.ts';
import type { ApplyTarget, Planned, Prepared } from './plan.ts';

/** what the applier remembers of an object it applied: enough to skip it next time */
export interface AppliedRecord {
  /** desired hash */
  hash: string;
  /** live fingerprint right after the apply */
  fingerprint: string;
  /** the object this process wrote: a presumed create that finds it again finds its own write */
  uid?: string;
  resourceVersion?: string;
  /** the driftIgnore pointers whose fields Hoist gave up */
  released?: string;
  /** interactive managers left on the object after the apply: they hold only ignored fields */
  heldBy?: string[];
}

function digestOfRecords(records: ReadonlyMap<string, { hash: string; fingerprint: string }>, ids: readonly string[]): string {
  return hashOf([...ids].sort().map((id) => [id, records.get(id)!.hash, records.get(id)!.fingerprint]));
}

export class AppliedRecords {
  /** per BD: objectId → desired hash and the live fingerprint right after it was applied */
  private readonly byBd = new Map<string, Map<string, AppliedRecord>>();

  constructor(
    /** field managers whose fields every apply takes over (hand edits) */
    readonly overrideManagers: ReadonlySet<string>,
    private readonly live: LiveIndex | undefined,
  ) {}

  get(bd: string, id: string): AppliedRecord | undefined {
    return this.byBd.get(bd)?.get(id);
  }

  set(bd: string, id: string, record: AppliedRecord): void {
    let perBd = this.byBd.get(bd);
    if (!perBd) this.byBd.set(bd, (perBd = new Map()));
    perBd.set(id, record);
  }

  delete(bd: string, id: string): void {
    this.byBd.get(bd)?.delete(id);
  }

  forget(bd: string): void {
    this.byBd.delete(bd);
  }

  /** the uid of the object this process last wrote as `obj` for `bd`, when it wrote one */
  writtenUid(bd: string, obj: KubeObject): string | undefined {
    return this.get(bd, objectId(obj))?.uid;
  }

  /** the live summary of a planned object: what the plan read, else the watches' */
  liveOf(p: Planned): LiveMeta | undefined {
    return p.live ? liveMetaOf(p.live) : this.live?.get(p.id);
  }

  /**
   * true when an interactive manager (kubectl edit/set/patch...) owns fields of the live object —
   * unless (given what was applied) those managers were left holding only ignored fields and the
   * object has not changed since, so an object with such a manager costs no request when unchanged
   */
  handEdited(live: LiveMeta | undefined, rec?: AppliedRecord, desired?: KubeObject['metadata']): boolean {
    const hand = live?.managers?.filter((m) => this.overrideManagers.has(m)) ?? [];
    if (hand.length === 0) return false;
    return !(rec?.heldBy && desired && hand.every((m) => rec.heldBy!.includes(m)) && rec.fingerprint === liveFingerprint(live!, desired));
  }

  /** an update whose desired hash and live fingerprint are as they were right after the last apply: nothing to send */
  unchanged(bd: string, p: Planned): boolean {
    if (p.decision.action !== 'update') return false;
    const rec = this.get(bd, p.id);
    const live = this.liveOf(p);
    if (this.handEdited(live, rec, p.obj.metadata)) return false;
    return !!rec && !!live && rec.hash === p.hash && rec.fingerprint === liveFingerprint(live, p.obj.metadata);
  }

  /** true when Hoist may own fields driftIgnore rules name: not given up since this process applied the object */
  mayOwnIgnored(bd: string, p: Prepared): boolean {
    return !!p.ignored && this.get(bd, p.id)?.released !== p.ignored.pointers.join('\n');
  }

  /**
   * The first apply of a BD in this process: when target.appliedDigest (recorded by whichever
   * process applied last) matches every object's desired hash and current live fingerprint, those
   * records are taken as this process's own, so nothing unchanged is sent again.
   */
  adopt(target: ApplyTarget, planned: readonly Planned[]): void {
    if (!target.appliedDigest || this.byBd.has(target.name)) return;
    const records = new Map<string, { hash: string; fingerprint: string }>();
    for (const p of planned) {
      const live = this.liveOf(p);
      if (p.decision.action !== 'update' || !live) return;
      records.set(p.id, { hash: p.hash, fingerprint: liveFingerprint(live, p.obj.metadata) });
    }
    if (digestOfRecords(records, [...records.keys()]) === target.appliedDigest) this.byBd.set(target.name, records);
  }

  /** the digest of what was applied of `ids` and how they looked right after, when every one has a record */
  digestOf(bd: string, ids: readonly string[]): string | undefined {
    const records = this.byBd.get(bd);
    return records && ids.every((id) => records.has(id)) ? digestOfRecords(records, ids) : undefined;
  }
}
