/**
 * A Source turns one spec.sources[] entry into content on disk. `resolve` is cheap (turns a
 * floating ref into an immutable identity); `fetch` is idempotent (lands that identity in the
 * content store, or finds it there).
 */
import type { ResolvedSourceStatus, SourceSpec } from '../../api/v1alpha2/types.ts';
import type { ContentStore } from '../cache/content-store.ts';
import type { StoreOutcome } from './cached-fetch.ts';

/** Credentials handed to a source, already read from the referenced Secret. Never logged. */
export interface Credentials {
  /** raw Secret data (base64-decoded), e.g. .dockerconfigjson, username, password, token */
  data: Record<string, string>;
  /** the Secret as `namespace/name`, for messages */
  secret?: string;
  /**
   * The Secret's `core.rukpak.io/credential-hosts` annotation, split: the hosts http and git
   * credentials may go to. Undefined when the Secret has none (then http/git refuse to use it).
   */
  hosts?: readonly string[];
}

/**
 * The CA bundle a git or http source's caSecretRef / caConfigMapRef names, already read and
 * checked to hold PEM certificates. Trusted for that source only, on top of the system roots and
 * `--ca-dir`. Not a secret, but named only by `ref` in messages.
 */
export interface SourceCA {
  /** one or more PEM certificates */
  pem: string;
  /** what messages name, e.g. `secret ns/name key ca.crt` */
  ref: string;
}

/** The entries of the Secret or ConfigMap an image source's `verify.publicKeys` names. */
export interface PublicKeySet {
  /** `Secret ns/name` or `ConfigMap ns/name`, for status and messages */
  from: string;
  /** every `*.pub` entry, by key name */
  entries: { name: string; pem: string }[];
}

export interface SourceContext {
  /** resolves spec.sources[i].*.auth.secretRef to the secret's data; undefined when no auth */
  credentials?: Credentials;
  /** the source's own CA (caSecretRef / caConfigMapRef); undefined when it names none */
  ca?: SourceCA;
  /** cancels the operation; every source also bounds each resolve and fetch by its own deadline */
  signal?: AbortSignal;
  /**
   * Previous resolution of this source under the same spec generation. With `recheck` false (or
   * unset) `resolve` must return that identity without any network call: floating refs are
   * resolved once per generation. With `recheck` true (a pollInterval elapsed) it re-checks with
   * the cheapest request (manifest HEAD, ref advertisement, If-None-Match).
   */
  previous?: ResolvedSourceStatus;
  recheck?: boolean;
  /**
   * reads the public keys of `image.verify.publicKeys`; called only when a signature must be
   * checked (a new digest or a re-check), so a reused resolution reads nothing
   */
  publicKeys?: () => Promise<PublicKeySet>;
  /** told how `fetch` was served: from the store, after proving access, or by a download */
  onStore?: (outcome: StoreOutcome) => void;
}

export interface Resolved {
  /** what goes into status.resolvedSources */
  status: ResolvedSourceStatus;
  /** content-store key: identity of the content (manifest digest, commit+dir, sha256) */
  key: string;
  /** true when the content is pinned by the spec itself (digest, commit, sha256) */
  pinned: boolean;
}

export interface Source {
  readonly kind: SourceSpec['kind'];
  /** turns the spec into an immutable identity; may use ctx.previous to avoid work */
  resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved>;
  /** ensures the content is in the store and returns the directory holding it */
  fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string>;
}
