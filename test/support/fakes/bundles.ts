/**
 * A Source and a Processor over bundles a test publishes in memory (Source, Processor: Hoist's
 * own ports). `publish(url, objects)` makes `objects` the content of an http source at `url`;
 * resolve names it by a digest of the objects, fetch lands it in the content store it is given
 * (a real one: the store's rules are its own tests'), and the processor returns the objects as
 * they were published. Either can be told to fail. Real sources: test/integration/sources,
 * test/e2e; real processors: test/integration/processors.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { ContentStore } from '../../../src/cache/content-store.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import type { Processor, ProcessResult } from '../../../src/processors/processor.ts';
import type { Resolved, Source, SourceContext } from '../../../src/sources/source.ts';
import { hashOf } from '../../../src/util/hash.ts';

const FILE = 'objects.json';

export class FakeSource implements Source {
  readonly kind = 'http' as const;
  private readonly latest = new Map<string, string>();
  private readonly contents = new Map<string, KubeObject[]>();
  /** per url: resolve or fetch throws this, until cleared */
  readonly failResolve = new Map<string, Error>();
  readonly failFetch = new Map<string, Error>();

  /** what `url` serves from now on; returns the source spec that names it */
  publish(url: string, objects: readonly KubeObject[]): SourceSpec {
    const digest = hashOf(objects);
    this.contents.set(digest, structuredClone([...objects]));
    this.latest.set(url, digest);
    return { kind: 'http', http: { url } };
  }

  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved> {
    const url = spec.http?.url ?? '';
    const failure = this.failResolve.get(url);
    if (failure) throw failure;
    // a recorded resolution is reused without a request unless a re-check is due (the Source contract)
    const digest = ctx.previous?.sha256 && !ctx.recheck ? ctx.previous.sha256 : this.latest.get(url);
    if (!digest) throw new Error(`the fake source has nothing published at ${url}`);
    return { status: { kind: 'http', sha256: digest }, key: `fake:${digest}`, pinned: false };
  }

  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore): Promise<string> {
    const failure = this.failFetch.get(spec.http?.url ?? '');
    if (failure) throw failure;
    const objects = this.contents.get(resolved.status.sha256 ?? '');
    if (!objects) throw new Error(`the fake source has no content ${resolved.key}`);
    return store.put(resolved.key, (dir) => writeFile(join(dir, FILE), JSON.stringify(objects)));
  }
}

export class FakeProcessor implements Processor {
  readonly format = 'plain' as const;
  /** every render throws this, until cleared */
  fail: Error | undefined;
  renders = 0;

  async render(tree: string): Promise<ProcessResult> {
    this.renders++;
    if (this.fail) throw this.fail;
    return { objects: JSON.parse(await readFile(join(tree, FILE), 'utf8')) as KubeObject[], warnings: [] };
  }
}
