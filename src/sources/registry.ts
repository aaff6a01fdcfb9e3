/**
 * Which Source serves which `spec.sources[].kind`. The reconciler asks `sourceFor(kind)` and
 * never names a concrete source; image, git and helm register here the same way http does.
 */
import type { SourceKind } from '../../api/v1alpha2/types.ts';
import type { ContentStore } from '../cache/content-store.ts';
import type { HostCAs } from './transport/ca-dir.ts';
import { GitSource, type GitSourceOptions } from './git/git-source.ts';
import { HelmSource, type HelmSourceOptions } from './helm/helm-source.ts';
import { HttpSource, type HttpSourceOptions } from './http-source.ts';
import { ImageSource, type ImageSourceOptions } from './image/image-source.ts';
import type { Source } from './source.ts';
import { SourceCode, sourceError } from './errors.ts';

export interface SourceRegistry {
  /** the source for a kind; a terminal spec error for a kind nobody registered */
  sourceFor(kind: SourceKind | string): Source;
  /** adds or replaces the source for `source.kind` */
  register(source: Source): void;
  kinds(): SourceKind[];
}

export interface SourceRegistryOptions {
  /** the content store, handed to sources that can land content while resolving */
  store?: ContentStore;
  /** overall deadline of one resolve or one fetch, for every source (default 10 min) */
  fetchTimeoutMs?: number;
  /** extra CA certificates (PEM) every source trusts in addition to the system roots */
  ca?: string;
  /** per-host CAs (`--ca-dir`), trusted for their host only, by every source */
  hostCAs?: HostCAs;
  http?: Omit<HttpSourceOptions, 'store'>;
  image?: ImageSourceOptions;
  git?: GitSourceOptions;
  helm?: Omit<HelmSourceOptions, 'store'>;
}

export function createSourceRegistry(options: SourceRegistryOptions = {}): SourceRegistry {
  const sources = new Map<SourceKind, Source>();
  const registry: SourceRegistry = {
    sourceFor(kind) {
      const s = sources.get(kind as SourceKind);
      if (!s) {
        throw sourceError(`no source is registered for kind ${JSON.stringify(kind)}`, {
          stage: 'spec',
          code: SourceCode.UnsupportedSource,
          terminal: true,
        });
      }
      return s;
    },
    register(source) {
      sources.set(source.kind, source);
    },
    kinds() {
      return [...sources.keys()].sort();
    },
  };
  const timeout = options.fetchTimeoutMs;
  const ca = options.ca;
  const hostCAs = options.hostCAs;
  // http and helm tarballs: the same transport options, the store their resolve may land content in
  const tarballs = {
    ...(ca ? { ca } : {}),
    ...(hostCAs ? { hostCAs } : {}),
    ...(timeout ? { timeoutMs: timeout } : {}),
  };
  const store = options.store ? { store: options.store } : {};
  registry.register(new HttpSource({ ...tarballs, ...options.http, ...store }));
  registry.register(new ImageSource({ ...(ca ? { ca } : {}), ...(hostCAs ? { hostCAs } : {}), ...(timeout ? { timeoutMs: timeout } : {}), ...options.image }));
  registry.register(
    new GitSource({
      ...(ca ? { caBundle: ca } : {}),
      ...(hostCAs ? { hostCAs } : {}),
      ...(timeout ? { fetchTimeoutMs: timeout, resolveTimeoutMs: Math.min(timeout, 60_000) } : {}),
      ...options.git,
    }),
  );
  registry.register(new HelmSource({ ...tarballs, ...options.helm, ...store }));
  return registry;
}
