/**
 * Resolves of a BundleDeployment's sources are bounded (issue 23): each resolve that may make a
 * request holds a slot of the resolve semaphore, so 8 sources of one BD (or many BDs) never
 * resolve more at once than it allows; a recorded resolution reused without a request takes no
 * slot. Counted, never timed.
 */
import { setImmediate } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { BundleDeployment, SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { ReconcilerDeps, StepContext } from '../../../src/reconciler/pipeline/context.ts';
import { resolveSources } from '../../../src/reconciler/pipeline/resolve.ts';
import { newState } from '../../../src/reconciler/pipeline/state.ts';
import type { Resolved, Source } from '../../../src/sources/source.ts';
import { Semaphore } from '../../../src/util/concurrency.ts';

const COMMIT = 'a'.repeat(40);

function harness(slots: number): { ctx: StepContext; peak: () => number; calls: () => number } {
  let active = 0;
  let peak = 0;
  let calls = 0;
  const source = {
    kind: 'git',
    async resolve(): Promise<Resolved> {
      calls++;
      peak = Math.max(peak, ++active);
      // stay in flight across several turns of the event loop, as a request does
      for (let i = 0; i < 5; i++) await setImmediate();
      active--;
      return { status: { kind: 'git', commit: COMMIT, ref: 'refs/heads/main' }, key: `git:${COMMIT}:`, pinned: false };
    },
  } as unknown as Source;
  const d = {
    identities: { for: () => ({}), defaultServiceAccount: undefined },
    sourceFor: () => source,
    renders: new Semaphore(4),
    resolves: new Semaphore(slots),
    client: {},
    controllerNamespace: 'hoist-system',
  } as unknown as ReconcilerDeps;
  return { ctx: { d, objects: {} as StepContext['objects'], pendingRotations: new Map(), redactions: new Map() }, peak: () => peak, calls: () => calls };
}

function bd(status?: BundleDeployment['status']): BundleDeployment {
  const sources: SourceSpec[] = Array.from({ length: 8 }, (_, i) => ({
    kind: 'git',
    destination: `s${i}`,
    git: { repository: `https://git.example/r${i}.git`, ref: { branch: 'main' } },
  }));
  return {
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name: 'eight-sources', generation: 1 },
    spec: { format: 'plain', sources },
    ...(status ? { status } : {}),
  } as BundleDeployment;
}

describe('resolveSources', () => {
  it('8 sources resolve at most as many at once as the resolve semaphore has slots', async () => {
    const h = harness(2);
    const resolved = await resolveSources(
      h.ctx,
      newState(bd(), () => new Date()),
    );
    expect(resolved).toHaveLength(8);
    expect(h.calls()).toBe(8);
    expect(h.peak()).toBe(2);
  });

  it('a recorded resolution of this generation is reused without waiting for a slot', async () => {
    const h = harness(1);
    const recorded = Array.from({ length: 8 }, () => ({ kind: 'git' as const, commit: COMMIT, generation: 1, resolvedAt: new Date().toISOString() }));
    const slots = h.ctx.d.resolves;
    // every slot taken by someone else for the whole resolve: reuse must not need one
    let release!: () => void;
    const held = slots.run(() => new Promise<void>((r) => (release = r)));
    const resolved = await resolveSources(
      h.ctx,
      newState(bd({ resolvedSources: recorded }), () => new Date()),
    );
    release();
    await held;
    expect(resolved).toHaveLength(8);
    expect(h.calls()).toBe(8);
  });
});
