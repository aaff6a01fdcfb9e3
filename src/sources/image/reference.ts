/**
 * Image references as Docker and containerd read them: `[registry/]repository[:tag][@digest]`.
 *
 * Docker Hub rules: no registry (first component without `.`, `:` and not `localhost`) means
 * `docker.io`; a single-component repository there gets the `library/` prefix; `docker.io`
 * and `index.docker.io` are served by `registry-1.docker.io`. No tag and no digest means
 * `latest`. A digest wins over a tag (the tag is kept for display only).
 *
 * Pure: no I/O.
 */
import { HoistError } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface ImageReference {
  /** registry as users write it, normalized: `docker.io`, `quay.io`, `127.0.0.1:5000` */
  registry: string;
  /** host[:port] the distribution API is served from (`registry-1.docker.io` for docker.io) */
  apiHost: string;
  /** repository path, e.g. `library/nginx`, `acme/rollouts-bundle` */
  repository: string;
  tag?: string;
  /** `sha256:<64 hex>` or `sha512:<128 hex>` */
  digest?: string;
}

const DOCKER_HUB = 'docker.io';
const DOCKER_HUB_API = 'registry-1.docker.io';
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;
// host (DNS name, IPv4 or bracketed IPv6) with an optional port
const REGISTRY = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export function isDigest(s: string): boolean {
  return DIGEST.test(s);
}

function invalid(raw: string, why: string): HoistError {
  return sourceError(`invalid image reference: ${why}`, {
    stage: 'spec',
    code: SourceCode.InvalidReference,
    subject: raw,
    terminal: true,
  });
}

/** Parses a reference; throws a terminal HoistError (stage spec) when it is malformed. */
export function parseReference(raw: string): ImageReference {
  const input = raw.trim();
  if (input === '' || input.length > 4096) throw invalid(raw, 'empty or too long');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input)) throw invalid(raw, 'a reference has no URL scheme');

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid(raw, 'digest must be sha256:<64 hex> or sha512:<128 hex>');
  }

  // A tag is after the last ':' that follows the last '/', so a registry port is not a tag.
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalid(raw, `bad tag "${tag}"`);
  }

  let registry = DOCKER_HUB;
  let path = rest;
  const slash = rest.indexOf('/');
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('[')) {
      registry = first;
      path = rest.slice(slash + 1);
    }
  }
  if (!REGISTRY.test(registry)) throw invalid(raw, `bad registry "${registry}"`);
  registry = registry.toLowerCase();
  if (registry === 'index.docker.io' || registry === DOCKER_HUB_API) registry = DOCKER_HUB;
  if (path === '') throw invalid(raw, 'missing repository');
  const components = path.split('/');
  for (const c of components) {
    if (!PATH_COMPONENT.test(c)) throw invalid(raw, `bad repository component "${c}" (lowercase letters, digits, separators)`);
  }
  if (registry === DOCKER_HUB && components.length === 1) path = `library/${path}`;
  if (path.length > 255) throw invalid(raw, 'repository longer than 255 characters');

  const ref: ImageReference = {
    registry,
    apiHost: registry === DOCKER_HUB ? DOCKER_HUB_API : registry,
    repository: path,
  };
  if (digest) ref.digest = digest;
  if (tag) ref.tag = tag;
  if (!digest && !tag) ref.tag = 'latest';
  return ref;
}

/** `registry/repository[:tag][@digest]`, fully qualified (always shows the registry). */
export function formatReference(ref: ImageReference): string {
  let s = `${ref.registry}/${ref.repository}`;
  if (ref.tag) s += `:${ref.tag}`;
  if (ref.digest) s += `@${ref.digest}`;
  return s;
}

/** The same repository pinned to `digest` (the tag is kept as a hint for people). */
export function withDigest(ref: ImageReference, digest: string): ImageReference {
  return { ...ref, digest };
}

/** `tag` or `digest`, as used in `/v2/<name>/manifests/<reference>` (digest preferred). */
export function manifestReference(ref: ImageReference): string {
  const r = ref.digest ?? ref.tag;
  if (!r) throw new Error('reference has neither tag nor digest');
  return r;
}
