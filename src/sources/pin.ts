/**
 * A source spec pinned to what it resolved to: an image tag (or semver range) to its digest, a git
 * branch, tag or semver range to its commit, an http URL to its sha256, a helm chart's version or
 * range to the chosen version and its tarball's sha256. Pure. A pinned spec resolves to the same content-store
 * key as the floating one did, without a network request, which is what lets a stored revision
 * be named by spec again (`hoist rollback`, DESIGN §3 "rolling back by spec").
 */
import type { BundleDeploymentSpec, ResolvedSourceStatus, SourceSpec } from '../../api/v1alpha2/types.ts';

/** `src` naming exactly `resolved`'s content; unchanged when `resolved` says nothing about it */
export function pinSource(src: SourceSpec, resolved: ResolvedSourceStatus | undefined): SourceSpec {
  if (!resolved || resolved.kind !== src.kind) return src;
  if (src.image && resolved.digest) {
    // the tag stays as a hint for people: a digest wins over a tag; a semver range is what the
    // digest replaces (the API refuses a range beside a digest)
    const { semver: _range, ...image } = src.image;
    const ref = image.ref.includes('@') ? image.ref : `${image.ref}@${resolved.digest}`;
    return { ...src, image: { ...image, ref } };
  }
  if (src.git && resolved.commit) return { ...src, git: { ...src.git, ref: { commit: resolved.commit } } };
  if (src.http && resolved.sha256) return { ...src, http: { ...src.http, sha256: resolved.sha256 } };
  // the version the range chose, and the tarball's digest: the same content without reading the index
  if (src.helm && resolved.sha256)
    return { ...src, helm: { ...src.helm, ...(resolved.version ? { version: resolved.version } : {}), sha256: resolved.sha256 } };
  return src;
}

export function pinSources(sources: readonly SourceSpec[], resolved: readonly ResolvedSourceStatus[] | undefined): SourceSpec[] {
  return sources.map((src, i) => pinSource(src, resolved?.[i]));
}

/** the spec fields that make a revision's inputs (format, installNamespace, config, sources), sources pinned */
export function revisionSpec(
  spec: Pick<BundleDeploymentSpec, 'format' | 'installNamespace' | 'config' | 'sources'>,
  resolved: readonly ResolvedSourceStatus[] | undefined,
): Pick<BundleDeploymentSpec, 'format' | 'installNamespace' | 'config' | 'sources'> {
  return {
    format: spec.format,
    ...(spec.installNamespace !== undefined ? { installNamespace: spec.installNamespace } : {}),
    ...(spec.config !== undefined ? { config: spec.config } : {}),
    sources: pinSources(spec.sources, resolved),
  };
}
