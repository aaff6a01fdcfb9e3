/**
 * The `image` Source (DESIGN §2): OCI images and Helm OCI charts from a registry.
 *
 * resolve — a digest reference is pinned and costs no request (with registries.conf mirrors: one
 *   verified manifest GET per location tried, recording the one that served it); a tag costs one manifest HEAD
 *   (plus one GET when the tag names an index, to record the platform manifest that will be
 *   unpacked). With `ctx.previous` and an unchanged digest, the HEAD is all it costs.
 *   Status: `{kind: 'image', digest, ref}` where `digest` is what the reference points at (index
 *   or manifest) and `ref` is `registry/repo[:tag]@<digest of the unpacked manifest>`; for an
 *   index the two digests differ, and `ref` is the exact platform image (`skopeo inspect` it).
 *   The API has no separate field for the platform manifest, so `ref` carries it.
 * key — `oci:<digest>`; with a non-default platform `oci:<digest>:<os>-<arch>[-<variant>]`, since
 *   one index gives different content per platform, and with a layerSelector `:layer-<hash of it>`,
 *   since one manifest gives a different tree per selected layer and operation.
 * fetch — a store hit makes no request (see authorization); a miss downloads, verifies and unpacks
 *   through the store's atomic, de-duplicated `put`.
 *
 * Cache-hit authorization (DESIGN §2, ../cached-fetch.ts): the store records which
 * registry/repository and credential pulled or proved each digest. A hit for the same repository
 * with another credential (or none) costs one authenticated manifest HEAD by digest (`authorize`);
 * a hit pulled only from another repository or registry is pulled again from this one, every
 * blob verified against its digest. The same BD fetching pinned content again, also after a
 * restart, makes zero requests.
 *
 * Every resolve and every fetch runs under one overall deadline (`timeoutMs`).
 *
 * verify — with `image.verify`, resolve also checks the digest's cosign signature (./verify/)
 *   before returning, so a refused image is never fetched; the outcome goes into
 *   `status.verification`.
 */
import { createHash } from 'node:crypto';
import type { ImageSource as ImageSourceSpec, ImageVerification, SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { ContentStore } from '../../cache/content-store.ts';
import { HoistError } from '../../util/errors.ts';
import type { UnpackLimits } from '../../util/unpack-tar.ts';
import { fetchThroughStore } from '../cached-fetch.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, withDeadline } from '../transport/deadline.ts';
import type { Resolved, Source, SourceContext } from '../source.ts';
import { RegistryClient, type OperationContext, type RegistryClientOptions } from './client.ts';
import { credentialIdentity, keyringFromSecretData, type RegistryCredential } from './docker-config.ts';
import { atStage, imageError, type ImageStage } from './errors.ts';
import { DEFAULT_PLATFORM, formatPlatform, parsePlatform, selectPlatform, type Platform } from './manifest.ts';
import { pullImage, type PullResult } from './pull.ts';
import { listTags } from './tags.ts';
import { highestMatching, semverRangeProblem } from '../semver-select.ts';
import { formatReference, parseReference, withDigest, type ImageReference } from './reference.ts';
import { insecureHostsOf, pullLocations, type PullLocation, type RegistriesConf } from './registries-conf.ts';
import { verifyImage } from './verify/verify-image.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface ImageSourceOptions extends RegistryClientOptions {
  /** platform picked from an index: `os/arch[/variant]` or an object; default linux/amd64 */
  platform?: string | Platform;
  /** unpack limits for one image (all layers together) */
  limits?: Partial<UnpackLimits>;
  /** overall deadline of one resolve or one fetch; default 10 min */
  timeoutMs?: number;
  /** share a client (and its token cache and connections) instead of creating one */
  client?: RegistryClient;
  /** called after every completed pull, e.g. for metrics */
  onPull?: (result: PullResult, ref: string) => void;
  /**
   * the controller's registries.conf: blocked registries, plain-http ones (added to
   * `insecureHosts` of a client this source creates) and mirrors for digest references
   */
  registries?: RegistriesConf;
}

/** What `resolve` returns: the Source contract plus the parsed, digest-pinned reference. */
export interface ImageResolved extends Resolved {
  /** the reference pinned to `status.digest` (the index or manifest the spec points at) */
  pinnedRef: string;
}

export class ImageSource implements Source {
  readonly kind = 'image' as const;
  readonly client: RegistryClient;
  private readonly platform: Platform;
  private readonly limits: Partial<UnpackLimits> | undefined;
  private readonly timeoutMs: number;
  private readonly onPull: ((result: PullResult, ref: string) => void) | undefined;
  private readonly ownsClient: boolean;
  private readonly registries: RegistriesConf | undefined;

  constructor(options: ImageSourceOptions = {}) {
    this.registries = options.registries;
    const insecureHosts = [...(options.insecureHosts ?? []), ...(options.registries ? insecureHostsOf(options.registries) : [])];
    this.client = options.client ?? new RegistryClient({ ...options, insecureHosts });
    this.ownsClient = options.client === undefined;
    this.platform = typeof options.platform === 'string' ? parsePlatform(options.platform) : (options.platform ?? DEFAULT_PLATFORM);
    this.limits = options.limits;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.onPull = options.onPull;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<ImageResolved> {
    const resolved = await this.resolveDigest(spec, ctx);
    const verify = spec.image?.verify;
    return verify ? this.verified(verify, resolved, ctx) : resolved;
  }

  private async resolveDigest(spec: SourceSpec, ctx: SourceContext): Promise<ImageResolved> {
    const ref = this.reference(spec);
    const subject = formatReference(ref);
    const locations = pullLocations(this.registries, ref, 'resolve');
    const recorded = ctx.previous;
    if (ref.digest) {
      // pinned by the spec: no network at all, unless mirrors decide where it comes from
      if (locations.length === 1) return this.resolved(spec, ref, ref.digest, formatReference(locations[0]!.ref), true);
      if (recorded?.kind === 'image' && recorded.digest === ref.digest && recorded.ref && !ctx.recheck)
        return { ...this.resolved(spec, ref, ref.digest, recorded.ref, true), status: { ...recorded } };
      const digest = ref.digest;
      return withDeadline(ctx.signal, this.timeoutMs, 'resolve', subject, async (signal) => {
        // the first location whose manifest matches the digest (verified over its bytes) serves it
        const served = await this.inOrder(
          locations,
          subject,
          'resolve',
          async (loc) => {
            await this.client.getManifest(loc.ref, { ...this.op(loc.ref, ctx, 'resolve'), signal });
            return loc;
          },
          signal,
        );
        return this.resolved(spec, ref, digest, formatReference(served.ref), true);
      });
    }
    if (spec.image?.semver !== undefined) return this.resolveSemver(spec, ref, locations[locations.length - 1]!.ref, subject, ctx);
    if (recorded?.kind === 'image' && recorded.digest && !ctx.recheck) {
      // resolved once per spec generation: reuse the recorded digest without a request
      return { status: { ...recorded }, key: this.key(recorded.digest, spec), pinned: false, pinnedRef: formatReference(withDigest(ref, recorded.digest)) };
    }
    const location = locations[0]!.ref;
    return withDeadline(ctx.signal, this.timeoutMs, 'resolve', subject, (signal) =>
      this.resolveTag(spec, location, subject, { ...this.op(location, ctx, 'resolve'), signal }, ctx),
    );
  }

  /**
   * `image.semver`: the repository's tags (tags.ts; from the registry itself, never a mirror),
   * the highest one the range admits (../semver-select.ts), then that tag resolved as any tag is.
   * No tag matching is transient: a later push or poll may bring one.
   */
  private async resolveSemver(spec: SourceSpec, ref: ImageReference, location: ImageReference, subject: string, ctx: SourceContext): Promise<ImageResolved> {
    const range = spec.image!.semver!;
    const problem = semverRangeProblem(range);
    if (problem) throw sourceError(`semver ${problem}`, { stage: 'spec', code: SourceCode.InvalidSource, subject, terminal: true });
    const recorded = ctx.previous;
    if (recorded?.kind === 'image' && recorded.digest && recorded.ref && !ctx.recheck) {
      return { status: { ...recorded }, key: this.key(recorded.digest, spec), pinned: false, pinnedRef: formatReference(withDigest(ref, recorded.digest)) };
    }
    return withDeadline(ctx.signal, this.timeoutMs, 'resolve', subject, async (signal) => {
      const op = { ...this.op(location, ctx, 'resolve'), signal };
      let tags: string[];
      try {
        tags = await listTags(this.client, location, op);
      } catch (e) {
        throw e instanceof HoistError ? atStage(e, 'resolve') : e;
      }
      const chosen = highestMatching(tags, range);
      if (!chosen)
        throw imageError(
          'resolve',
          SourceCode.NoMatchingVersion,
          `no tag of ${tags.length} is a version semver ${JSON.stringify(range)} admits`,
          subject,
          false,
        );
      const tagged = { ...location, tag: chosen.tag };
      // the recorded resolution stands only for the same tag: a newer tag is recorded by its name
      const sameTag = recorded?.kind === 'image' && recorded.ref?.startsWith(`${formatReference(tagged)}@`);
      return this.resolveTag(spec, tagged, formatReference(tagged), op, sameTag ? ctx : { ...ctx, previous: undefined });
    });
  }

  /**
   * Checks the cosign signature of the resolved digest (./verify/) in the repository that served
   * it, before anything is fetched. A verification recorded for the same digest under this spec
   * generation is reused without a request, except that a recorded failure (policy Warn) is
   * checked again on a re-check.
   */
  private async verified(verify: ImageVerification, resolved: ImageResolved, ctx: SourceContext): Promise<ImageResolved> {
    const digest = resolved.status.digest!;
    const recorded = ctx.previous?.kind === 'image' && ctx.previous.digest === digest ? ctx.previous.verification : undefined;
    if (recorded && (!ctx.recheck || recorded.result === 'Verified')) return { ...resolved, status: { ...resolved.status, verification: recorded } };
    const location = parseReference(resolved.status.ref!);
    const subject = resolved.pinnedRef;
    if (!ctx.publicKeys) {
      throw sourceError('image.verify needs the public keys of verify.publicKeys, which only the controller reads', {
        stage: 'spec',
        code: SourceCode.InvalidSource,
        subject,
        terminal: true,
      });
    }
    const keys = await ctx.publicKeys();
    const op = this.op(location, ctx, 'resolve');
    const verification = await withDeadline(ctx.signal, this.timeoutMs, 'resolve', subject, (signal) =>
      verifyImage(this.client, location, digest, verify, keys, { ...op, signal }, subject),
    );
    return { ...resolved, status: { ...resolved.status, verification } };
  }

  private async resolveTag(spec: SourceSpec, ref: ImageReference, subject: string, op: OperationContext, ctx: SourceContext): Promise<ImageResolved> {
    try {
      const head = await this.client.headManifest(ref, op);
      const prev = ctx.previous;
      if (prev?.kind === 'image' && prev.digest === head.digest && prev.ref) {
        // unchanged since the last resolution: keep what was recorded, no further request
        return { status: { ...prev }, key: this.key(head.digest, spec), pinned: false, pinnedRef: formatReference(withDigest(ref, head.digest)) };
      }
      const isIndex = head.mediaType.includes('index') || head.mediaType.includes('manifest.list');
      if (!isIndex) return this.resolved(spec, ref, head.digest, formatReference(withDigest(ref, head.digest)), false);
      // the index names the platform manifest's digest: no need to fetch that manifest here
      const top = await this.client.getManifest(withDigest(ref, head.digest), op);
      const chosen = top.manifest.kind === 'index' ? selectPlatform(top.manifest, this.platform, subject).digest : top.digest;
      return this.resolved(spec, ref, head.digest, formatReference(withDigest(ref, chosen)), false);
    } catch (e) {
      throw e instanceof HoistError ? atStage(e, 'resolve') : e;
    }
  }

  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string> {
    const ref = this.pinned(spec, resolved);
    const subject = formatReference(ref);
    const locations = this.ordered(ref, resolved);
    return withDeadline(ctx.signal, this.timeoutMs, 'fetch', subject, (signal) =>
      this.inOrder(
        locations,
        subject,
        'fetch',
        (loc) => {
          const op = this.op(loc.ref, ctx, 'fetch');
          const where = `${loc.ref.registry}/${loc.ref.repository}`;
          return fetchThroughStore({
            store,
            key: resolved.key,
            // the location actually used: a mirror's pull never proves access at the original
            origin: { location: where, credential: op.credential ? credentialIdentity(op.credential) : undefined, display: where },
            subject,
            ...(ctx.onStore ? { observe: ctx.onStore } : {}),
            download: async (tmp, space) => {
              const layerSelector = spec.image?.layerSelector;
              const result = await pullImage(
                this.client,
                loc.ref,
                tmp,
                { ...op, signal },
                {
                  platform: this.platform,
                  ...(this.limits ? { limits: this.limits } : {}),
                  ...(layerSelector ? { layerSelector } : {}),
                  charge: (n) => space.charge(n),
                },
              );
              this.onPull?.(result, formatReference(loc.ref));
            },
            prove: async () => {
              await this.client.headManifest(loc.ref, { ...op, signal });
            },
          });
        },
        signal,
      ),
    );
  }

  /**
   * Runs `attempt` on each location in turn until one succeeds. With a single location its error
   * is the error; otherwise the error names every location tried and why it failed.
   */
  private async inOrder<T>(
    locations: PullLocation[],
    subject: string,
    stage: ImageStage,
    attempt: (loc: PullLocation) => Promise<T>,
    signal: AbortSignal,
  ): Promise<T> {
    if (locations.length === 1) return attempt(locations[0]!);
    const failures: HoistError[] = [];
    for (const loc of locations) {
      try {
        return await attempt(loc);
      } catch (e) {
        if (signal.aborted || !(e instanceof HoistError)) throw e;
        failures.push(atStage(e, stage));
      }
    }
    const last = failures.at(-1)!;
    const why = locations.map((l, i) => `${formatReference(l.ref)}: ${failures[i]!.message}`).join('; ');
    throw new HoistError(`no location served the image (${why})`, {
      stage,
      code: last.code,
      subject,
      terminal: failures.every((f) => f.terminal),
    });
  }

  /** Where to pull the pinned reference from: the location resolve recorded first, then the others in the configured order. */
  private ordered(ref: ImageReference, resolved: Resolved): PullLocation[] {
    const locations = pullLocations(this.registries, ref, 'fetch');
    const recorded = resolved.status.ref ? parseReference(resolved.status.ref) : undefined;
    const isRecorded = (l: PullLocation): boolean => recorded !== undefined && l.ref.registry === recorded.registry && l.ref.repository === recorded.repository;
    return [...locations.filter(isRecorded), ...locations.filter((l) => !isRecorded(l))];
  }

  /**
   * Proves this BD may read the resolved content: an authenticated manifest HEAD by digest with
   * its own credentials. Resolves when access is granted; throws a HoistError (stage fetch) when
   * it is not. Never reads the store.
   */
  async authorize(spec: SourceSpec, resolved: Resolved, ctx: SourceContext): Promise<void> {
    const location = this.ordered(this.pinned(spec, resolved), resolved)[0]!.ref;
    await this.client.headManifest(location, this.op(location, ctx, 'fetch'));
  }

  private resolved(spec: SourceSpec, ref: ImageReference, digest: string, recordedRef: string, pinned: boolean): ImageResolved {
    return {
      status: { kind: 'image', digest, ref: recordedRef },
      key: this.key(digest, spec),
      pinned,
      pinnedRef: formatReference(withDigest(ref, digest)),
    };
  }

  /**
   * The content key: one digest gives different trees per platform and per layer selection, so
   * both are part of it when they are not the default.
   */
  private key(digest: string, spec: SourceSpec): string {
    const p = this.platform;
    const isDefault = p.os === DEFAULT_PLATFORM.os && p.architecture === DEFAULT_PLATFORM.architecture && p.variant === undefined;
    const platform = isDefault ? '' : `:${formatPlatform(p).replaceAll('/', '-')}`;
    const selector = spec.image?.layerSelector;
    const layer = selector
      ? `:layer-${createHash('sha256')
          .update(`${selector.mediaType}\n${selector.operation ?? 'extract'}`)
          .digest('hex')
          .slice(0, 16)}`
      : '';
    return `oci:${digest}${platform}${layer}`;
  }

  private reference(spec: SourceSpec): ImageReference {
    const image: ImageSourceSpec | undefined = spec.image;
    if (spec.kind !== 'image' || !image?.ref) {
      throw sourceError('source of kind image needs image.ref', { stage: 'spec', code: SourceCode.InvalidSource, terminal: true });
    }
    const ref = parseReference(image.ref);
    if (image.semver === undefined) return ref;
    // with semver the ref names the repository only: no tag (not even the default), no digest
    if (/@|\/[^/]*:[^/]*$/.test(image.ref)) {
      throw sourceError('with semver, image.ref names the repository only (no tag, no digest)', {
        stage: 'spec',
        code: SourceCode.InvalidSource,
        subject: image.ref,
        terminal: true,
      });
    }
    const { tag: _default, ...repository } = ref;
    return repository;
  }

  /** The spec's reference pinned to the resolved digest. */
  private pinned(spec: SourceSpec, resolved: Resolved): ImageReference {
    const ref = this.reference(spec);
    const digest = resolved.status.digest;
    if (!digest) {
      throw sourceError('resolved image source has no digest', {
        stage: 'fetch',
        code: SourceCode.NotResolved,
        subject: formatReference(ref),
        terminal: false,
      });
    }
    return withDigest(ref, digest);
  }

  private credentialFor(ref: ImageReference, ctx: SourceContext): RegistryCredential | undefined {
    return keyringFromSecretData(ctx.credentials?.data).lookup(ref);
  }

  private op(ref: ImageReference, ctx: SourceContext, stage: ImageStage): OperationContext {
    let credential: RegistryCredential | undefined;
    try {
      credential = this.credentialFor(ref, ctx);
    } catch (e) {
      if (!(e instanceof HoistError)) throw e;
      // a malformed secret: name the image it was meant for (the secret's content is never shown)
      throw new HoistError(e.message, { stage, code: e.code, subject: formatReference(ref), terminal: true });
    }
    return { credential, stage, signal: ctx.signal };
  }
}
