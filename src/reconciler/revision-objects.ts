/**
 * Per BundleDeployment, the objects of the revision last rendered and of the stored revision last
 * loaded, so a warm reconcile neither fetches, renders nor reads a revision Secret. Everything
 * here can be recomputed: losing it (restart) costs requests, never correctness.
 */
import type { RevisionRecord, RevisionStore } from '../apply/revision-store.ts';
import type { KubeObject } from '../kube/types.ts';
import { HoistError } from '../util/errors.ts';

/** A rendered revision: the objects and where they came from. */
export interface Rendered {
  /** hash of everything that went into the render (sources, config, names) */
  inputs: string;
  contentDigest: string;
  objects: KubeObject[];
  /** set when reused from the revision store (no fetch, no render) */
  stored?: RevisionRecord;
}

export class RevisionObjects {
  private readonly rendered = new Map<string, Rendered>();
  private readonly loaded = new Map<string, { number: number; objects: KubeObject[] }>();

  constructor(private readonly store: Pick<RevisionStore, 'load'>) {}

  /** the last render of bd when it had these inputs */
  renderedWith(name: string, inputs: string): Rendered | undefined {
    const memo = this.rendered.get(name);
    return memo?.inputs === inputs ? memo : undefined;
  }

  rememberRendered(name: string, r: Rendered): void {
    this.rendered.set(name, r);
  }

  rememberLoaded(name: string, number: number, objects: KubeObject[]): void {
    this.loaded.set(name, { number, objects });
  }

  /** the objects of a stored revision: from memory, else from the revision store */
  async of(name: string, rev: { number: number; contentDigest: string }): Promise<KubeObject[]> {
    const memo = this.rendered.get(name);
    if (memo?.contentDigest === rev.contentDigest) return memo.objects;
    const loaded = this.loaded.get(name);
    if (loaded?.number === rev.number) return loaded.objects;
    const objects = await this.store.load(name, rev);
    if (!objects) {
      throw new HoistError(`revision ${rev.number} (${rev.contentDigest}) is not in the revision store`, { stage: 'apply', reason: 'ApplyFailed', code: 'revision-missing', subject: `revision ${rev.number}`, terminal: false });
    }
    this.loaded.set(name, { number: rev.number, objects });
    return objects;
  }

  forget(name: string): void {
    this.rendered.delete(name);
    this.loaded.delete(name);
  }
}
