/**
 * Per BundleDeployment, the objects of the revision last rendered and of the stored revision last
 * loaded, so a warm reconcile neither fetches, renders nor reads a revision Secret. Everything
 * here can be recomputed: losing it (restart) costs requests, never correctness.
 */
import { splitHooks } from '../apply/hooks.ts';
import { objectId } from '../apply/object-id.ts';
import type { PackedRevision, RevisionRecord, RevisionStore } from './revision-store.ts';
import type { KubeObject } from '../kube/types.ts';
import { ApplyCode } from '../apply/errors.ts';
import { HoistError } from '../util/errors.ts';

/** A rendered revision: the objects and where they came from. */
export interface Rendered {
  /** hash of everything that went into the render (sources, config, names) */
  inputs: string;
  contentDigest: string;
  /** the managed objects: applied, watched, pruned */
  objects: KubeObject[];
  /** the Helm hooks (src/apply/hooks.ts): run for their events, never applied as managed objects */
  hooks: KubeObject[];
  /** set when reused from the revision store (no fetch, no render) */
  stored?: RevisionRecord;
  /** the compressed form, made by a fresh render (which checks the size cap): taken by the apply that stores it */
  packed?: PackedRevision;
  /** the texts of values a fresh render decrypted (SOPS): blanked out of messages; memory only */
  sensitive?: string[];
}

export class RevisionObjects {
  private readonly rendered = new Map<string, Rendered>();
  private readonly loaded = new Map<string, { number: number; objects: KubeObject[]; hooks: KubeObject[] }>();
  /** per BD, the inputs whose render was refused (the revision size cap) and why: not rendered again for them */
  private readonly refused = new Map<string, { inputs: string; error: Error }>();

  /**
   * `place`: gives objects whose kind was not served when their revision was rendered their
   * namespace once it is (namespaces.ts placeUnplaced), and says whether every scope is known
   */
  constructor(
    private readonly store: Pick<RevisionStore, 'load'>,
    private readonly place?: (name: string, objects: KubeObject[]) => Promise<{ objects: KubeObject[]; settled: boolean }>,
  ) {}

  /** object lists whose every scope is known: not looked at again on each reconcile */
  private readonly settled = new WeakSet<KubeObject[]>();

  /** r with its objects placed (the memo keeps the placed ones) */
  async placed<T extends Pick<Rendered, 'objects'>>(name: string, r: T): Promise<T> {
    if (!this.place || this.settled.has(r.objects)) return r;
    const { objects, settled } = await this.place(name, r.objects);
    r.objects = objects;
    if (settled) this.settled.add(objects);
    return r;
  }

  /** the last render of bd when it had these inputs */
  renderedWith(name: string, inputs: string): Rendered | undefined {
    const memo = this.rendered.get(name);
    return memo?.inputs === inputs ? memo : undefined;
  }

  rememberRendered(name: string, r: Rendered): void {
    this.rendered.set(name, r);
    this.refused.delete(name);
  }

  /** the refusal of bd's render with these inputs, if it was refused */
  refusedWith(name: string, inputs: string): Error | undefined {
    const r = this.refused.get(name);
    return r?.inputs === inputs ? r.error : undefined;
  }

  rememberRefused(name: string, inputs: string, error: Error): void {
    this.refused.set(name, { inputs, error });
  }

  rememberLoaded(name: string, number: number, r: Pick<Rendered, 'objects' | 'hooks'>): void {
    this.loaded.set(name, { number, objects: r.objects, hooks: r.hooks });
  }

  /** the managed objects of a stored revision: from memory, else from the revision store */
  async of(name: string, rev: { number: number; contentDigest: string }): Promise<KubeObject[]> {
    return (await this.revision(name, rev)).objects;
  }

  /** the Helm hooks of a stored revision */
  async hooksOf(name: string, rev: { number: number; contentDigest: string }): Promise<KubeObject[]> {
    return (await this.revision(name, rev)).hooks;
  }

  private async revision(name: string, rev: { number: number; contentDigest: string }): Promise<Pick<Rendered, 'objects' | 'hooks'>> {
    const memo = this.rendered.get(name);
    if (memo?.contentDigest === rev.contentDigest) return this.placed(name, memo);
    const loaded = this.loaded.get(name);
    if (loaded?.number === rev.number) return this.placed(name, loaded);
    const all = await this.store.load(name, rev);
    if (!all) {
      throw new HoistError(`revision ${rev.number} (${rev.contentDigest}) is not in the revision store`, {
        code: ApplyCode.RevisionMissing,
        stage: 'apply',
        subject: `revision ${rev.number}`,
        terminal: false,
      });
    }
    const { managed, hooks } = splitHooks(all);
    const entry = { number: rev.number, objects: managed, hooks };
    this.loaded.set(name, entry);
    return this.placed(name, entry);
  }

  /**
   * True when the BD's last rendered or loaded revision has an object with this id and none of
   * these label or annotation keys is set by it or by Hoist (`own`: the labels and annotations
   * every apply adds); false when it does not know the object.
   */
  setsNoneOf(
    name: string,
    id: string,
    keys: { labels: readonly string[]; annotations: readonly string[] },
    own: { labels: readonly string[]; annotations: readonly string[] },
  ): boolean {
    if (keys.labels.some((k) => own.labels.includes(k)) || keys.annotations.some((k) => own.annotations.includes(k))) return false;
    const candidates = [this.rendered.get(name)?.objects, this.loaded.get(name)?.objects].flatMap((objs) => objs?.filter((o) => objectId(o) === id) ?? []);
    if (candidates.length === 0) return false;
    return candidates.every(
      (o) =>
        !keys.labels.some((k) => Object.hasOwn(o.metadata.labels ?? {}, k)) && !keys.annotations.some((k) => Object.hasOwn(o.metadata.annotations ?? {}, k)),
    );
  }

  forget(name: string): void {
    this.rendered.delete(name);
    this.loaded.delete(name);
    this.refused.delete(name);
  }
}
