/**
 * Per BundleDeployment, the objects of the revision last rendered and of the stored revision last
 * loaded, so a warm reconcile neither fetches, renders nor reads a revision Secret. Everything
 * here can be recomputed: losing it (restart) costs requests, never correctness.
 *
 * The BDs used most recently (HOT_ENTRIES) keep their objects as objects; the others keep them as
 * their JSON text, parsed again when next used: a one-byte string is about half the heap of the
 * objects it holds, and at 10,000 BundleDeployments the memo was the largest thing held after the
 * BD cache (docs/benchmarks.md). A reconcile reads the objects a few times; parsing a 4-object
 * revision costs about as much as one watch event.
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

/** BDs whose memo stays as objects; the rest are kept as JSON text */
export const HOT_ENTRIES = 256;

interface Loaded {
  number: number;
  objects: KubeObject[];
  hooks: KubeObject[];
}

/** a memo entry out of the hot set: its objects and hooks as JSON text */
type Cold<T extends { objects: KubeObject[]; hooks: KubeObject[] }> = Omit<T, 'objects' | 'hooks'> & { json: string };

export class RevisionObjects {
  private readonly rendered = new Map<string, Rendered | Cold<Rendered>>();
  private readonly loaded = new Map<string, Loaded | Cold<Loaded>>();
  /** the BDs whose entries are objects now, least recently used first */
  private readonly hot = new Set<string>();
  /** per BD, the inputs whose render was refused (the revision size cap) and why: not rendered again for them */
  private readonly refused = new Map<string, { inputs: string; error: Error }>();

  /**
   * `place`: gives objects whose kind was not served when their revision was rendered their
   * namespace once it is (namespaces.ts placeUnplaced), and says whether every scope is known
   */
  constructor(
    private readonly store: Pick<RevisionStore, 'load'>,
    private readonly place?: (name: string, objects: KubeObject[]) => Promise<{ objects: KubeObject[]; settled: boolean }>,
    private readonly hotEntries = HOT_ENTRIES,
  ) {}

  /** bd's entries as objects (parsed back when cold), and bd the most recently used */
  private warm(name: string): { rendered: Rendered | undefined; loaded: Loaded | undefined } {
    const r = this.rendered.get(name);
    const l = this.loaded.get(name);
    if (this.hot.delete(name) || (!r && !l)) {
      if (r || l) this.hot.add(name);
      return { rendered: r as Rendered | undefined, loaded: l as Loaded | undefined };
    }
    const rendered = r && 'json' in r ? thawed(r) : (r as Rendered | undefined);
    // one text for both when the loaded revision is the rendered one (a fresh install): one parse
    const loaded =
      l && 'json' in l
        ? r && 'json' in r && l.json === r.json && rendered
          ? { number: l.number, objects: rendered.objects, hooks: rendered.hooks }
          : thawed(l)
        : (l as Loaded | undefined);
    if (rendered) this.rendered.set(name, rendered);
    if (loaded) this.loaded.set(name, loaded);
    this.touch(name);
    return { rendered, loaded };
  }

  /** bd the most recently used; the least recently used beyond the hot set is frozen */
  private touch(name: string): void {
    this.hot.delete(name);
    this.hot.add(name);
    if (this.hot.size <= this.hotEntries) return;
    const oldest = this.hot.values().next().value as string;
    this.hot.delete(oldest);
    const r = this.rendered.get(oldest) as Rendered | undefined;
    const l = this.loaded.get(oldest) as Loaded | undefined;
    const rj = r ? frozen(r) : undefined;
    if (r && rj) this.rendered.set(oldest, rj);
    if (l) this.loaded.set(oldest, rj && r && l.objects === r.objects && l.hooks === r.hooks ? { number: l.number, json: rj.json } : frozen(l));
  }

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
    if (this.rendered.get(name)?.inputs !== inputs) return undefined;
    return this.warm(name).rendered;
  }

  rememberRendered(name: string, r: Rendered): void {
    this.warm(name);
    this.rendered.set(name, r);
    this.refused.delete(name);
    this.touch(name);
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
    this.warm(name);
    this.loaded.set(name, { number, objects: r.objects, hooks: r.hooks });
    this.touch(name);
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
    if (this.rendered.get(name)?.contentDigest === rev.contentDigest) return this.placed(name, this.warm(name).rendered!);
    if (this.loaded.get(name)?.number === rev.number) return this.placed(name, this.warm(name).loaded!);
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
    this.warm(name);
    this.loaded.set(name, entry);
    this.touch(name);
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
    const { rendered, loaded } = this.warm(name);
    const candidates = [rendered?.objects, loaded?.objects].flatMap((objs) => objs?.filter((o) => objectId(o) === id) ?? []);
    if (candidates.length === 0) return false;
    return candidates.every(
      (o) =>
        !keys.labels.some((k) => Object.hasOwn(o.metadata.labels ?? {}, k)) && !keys.annotations.some((k) => Object.hasOwn(o.metadata.annotations ?? {}, k)),
    );
  }

  forget(name: string): void {
    this.hot.delete(name);
    this.rendered.delete(name);
    this.loaded.delete(name);
    this.refused.delete(name);
  }
}

/**
 * an entry with its objects and hooks as one JSON text, without the compressed form a fresh render
 * made: the reconcile that rendered it holds its own reference (and the apply re-packs without one)
 */
function frozen<T extends { objects: KubeObject[]; hooks: KubeObject[]; packed?: unknown }>(entry: T): Cold<T> {
  const { objects, hooks, packed: _packed, ...rest } = entry;
  return { ...rest, json: JSON.stringify([objects, hooks]) } as Cold<T>;
}

/** a frozen entry as objects again */
function thawed<T extends { objects: KubeObject[]; hooks: KubeObject[] }>(entry: Cold<T>): T {
  const { json, ...rest } = entry;
  const [objects, hooks] = JSON.parse(json) as [KubeObject[], KubeObject[]];
  return { ...rest, objects, hooks } as unknown as T;
}
