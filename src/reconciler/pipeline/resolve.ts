/**
 * Resolve: every source to an immutable identity (digest, commit, sha256). A recorded resolution
 * of this generation is reused without a network call unless pollInterval elapsed or the source's
 * Secret rotated, a webhook push named it or a reconcile was requested (floating refs only). A
 * resolve that may make a request runs inside the resolve
 * semaphore (`deps.resolves`, as many slots as `--max-concurrent-renders`, shared by every BD);
 * it holds no other slot meanwhile. Sets Resolved.
 */
import { pinnedBySpec, type ResolvedSourceStatus } from '../../../api/v1alpha2/types.ts';
import type { Resolved } from '../../sources/source.ts';
import { readCredentials } from '../inputs/credentials.ts';
import { publicKeysOf } from '../inputs/public-keys.ts';
import { readSourceCA, rotationKeysOf, verifyKeysRotated } from '../inputs/source-ca.ts';
import type { StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';
import { setResolved } from '../status.ts';

export async function resolveSources(ctx: StepContext, s: ReconcileState): Promise<Resolved[]> {
  const { d } = ctx;
  // who acts for this BD; a default account without a namespace to live in stops here
  d.identities.for(s.bd);
  const rotated = new Set([...(ctx.pendingRotations.get(s.name) ?? []), ...(d.secrets?.takeRotated(s.name) ?? [])]);
  if (rotated.size > 0) ctx.pendingRotations.set(s.name, rotated);
  // a verified webhook push, or a reconcile requested (core.rukpak.io/requested-at), re-checks floating refs now
  const pushed = (d.pushes?.takePushed(s.name) ?? false) || s.request !== undefined;
  const now = s.now().getTime();
  const resolved = await s.time(
    'resolve',
    Promise.all(
      s.spec.sources.map(async (src, i) => {
        const prev = s.status.resolvedSources?.[i];
        const previous = prev?.kind === src.kind && prev.generation === s.generation ? prev : undefined;
        const pollDue = s.spec.pollIntervalMs !== undefined && (!previous?.resolvedAt || Date.parse(previous.resolvedAt) + s.spec.pollIntervalMs <= now);
        // a rotated Secret (or CA ConfigMap) re-checks a floating ref with the new credentials or CA,
        // and so does a verified webhook push of its repository and branch; pinned content needs no request
        const refRotated = rotationKeysOf(s.bd, src, d.controllerNamespace, d.identities.defaultServiceAccount).some((k) => rotated.has(k));
        // changed verification keys re-check a failed (Warn) verification, pinned or not; a verified digest stays verified
        const keysRotated = verifyKeysRotated(s.bd, src, rotated, d.controllerNamespace, d.identities.defaultServiceAccount);
        const recheck = !!previous && (pollDue || keysRotated || ((pushed || refRotated) && !pinnedBySpec(src)));
        // a recorded resolution is reused without a network call, so no credentials are read
        const credentials =
          !previous || recheck ? await readCredentials(d.client, d.controllerNamespace, s.bd, src, d.identities.defaultServiceAccount) : undefined;
        const publicKeys = publicKeysOf(d.client, d.controllerNamespace, s.bd, src, d.identities.defaultServiceAccount);
        const ca = !previous || recheck ? await readSourceCA(d.client, d.controllerNamespace, s.bd, src, d.identities.defaultServiceAccount) : undefined;
        const resolve = (): Promise<Resolved> =>
          d.sourceFor(src.kind).resolve(src, {
            previous,
            recheck,
            credentials,
            ...(ca ? { ca } : {}),
            ...(publicKeys ? { publicKeys } : {}),
            ...(s.signal ? { signal: s.signal } : {}),
          });
        // a resolve that may ask the network holds a slot of the resolve semaphore: a BD's up to 8
        // sources, and many BDs at once, cannot read advertisements or indexes beyond its size;
        // a recorded resolution reused without a request waits for nothing
        const r = !previous || recheck ? await d.resolves.run(resolve, s.signal) : await resolve();
        r.status.resolvedAt = recheck || !previous ? s.now().toISOString() : previous.resolvedAt;
        r.status.generation = s.generation;
        return r;
      }),
    ),
  );
  ctx.pendingRotations.delete(s.name);
  s.status.resolvedSources = resolved.map((r) => r.status);
  // image.verify under policy Warn installs unverified content: say so where people look first
  const signature = (v: ResolvedSourceStatus['verification']): string =>
    !v ? '' : v.result === 'Verified' ? ' (signature verified)' : ` (signature NOT verified, policy Warn: ${v.reason ?? 'failed'})`;
  const named = (r: (typeof resolved)[number]) =>
    `${r.status.kind} ${r.status.version ? `${r.status.version} ` : ''}${r.status.digest ?? r.status.commit ?? r.status.sha256 ?? r.key}${signature(r.status.verification)}`;
  setResolved(s, resolved.map(named).join(', '));
  return resolved;
}
