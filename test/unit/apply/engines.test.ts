/**
 * The applier's engines by level over fakes of the level below: the revision engine over a fake
 * phased applier (order of hooks, apply, settle, prune; every outcome one result; a cancellation
 * thrown), the phase engine over a fake object level (presumed creates, refusals undone).
 */
import { describe, expect, it } from 'vitest';
import type { ApplyTarget, Planned } from '../../../src/apply/plan.ts';
import type { ApplyReport, ObjectResult } from '../../../src/apply/result.ts';
import { RevisionEngine, type RevisionApplier } from '../../../src/apply/revision-engine.ts';
import { PhaseEngine, type PhaseCall } from '../../../src/apply/phase-engine.ts';
import type { Created, ObjectApplier, ObjectCall } from '../../../src/apply/object-engine.ts';
import { ApplyCode, ObjectsError } from '../../../src/apply/errors.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { CancelledError, HoistError } from '../../../src/util/errors.ts';

const target = { name: 'bd', lineage: 'bd', revision: 2 } as ApplyTarget;
const cm = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' } });

class FakePhases implements RevisionApplier {
  readonly calls: string[] = [];
  constructor(private readonly answer: () => Promise<ApplyReport>) {}
  async apply(): Promise<ApplyReport> {
    this.calls.push('apply');
    return this.answer();
  }
  async ensureInstallNamespace(): Promise<void> {
    this.calls.push('namespace');
  }
}

const applied: ApplyReport = { results: [{ id: 'a', subject: 'v1 ConfigMap ns/a', action: 'created' }], skippedOptional: [] };

describe('RevisionEngine', () => {
  it('runs hooks, the steps, settle and prune in that order and answers applied', async () => {
    const phases = new FakePhases(async () => applied);
    const order = phases.calls;
    const pruned: ObjectResult[] = [{ id: 'b', subject: 'v1 ConfigMap ns/b', action: 'deleted' }];
    const result = await new RevisionEngine(phases).run({
      target,
      objects: [cm('a')],
      hooks: { inNamespace: true, run: async () => (order.push('hooks'), undefined) },
      settle: async () => void order.push('settle'),
      prune: async () => (order.push('prune'), pruned),
    });
    expect(order).toEqual(['namespace', 'hooks', 'apply', 'settle', 'prune']);
    expect(result).toEqual({ kind: 'applied', report: applied, pruned });
  });

  it('a failed hook stops the revision before any object', async () => {
    const phases = new FakePhases(async () => applied);
    const error = new HoistError('pre-upgrade hook Job ns/h failed', { stage: 'apply', code: 'hook-failed', terminal: true });
    const result = await new RevisionEngine(phases).run({ target, objects: [], hooks: { inNamespace: false, run: async () => error } });
    expect(result).toEqual({ kind: 'hook-failed', error });
    expect(phases.calls).toEqual([]);
  });

  it('a gate stop is pending: no settle, no prune', async () => {
    const pending = { step: 'deploy', after: 'crds', waiting: 'x' };
    const phases = new FakePhases(async () => ({ ...applied, pending }));
    let later = 0;
    const result = await new RevisionEngine(phases).run({ target, objects: [], settle: async () => void later++, prune: async () => (later++, []) });
    expect(result.kind).toBe('pending');
    expect(later).toBe(0);
  });

  it('names the stage that failed: hooks, apply (settle included), prune', async () => {
    const boom = new Error('no answer');
    const hooks = await new RevisionEngine(new FakePhases(async () => applied)).run({
      target,
      objects: [],
      hooks: { inNamespace: false, run: () => Promise.reject(boom) },
    });
    expect(hooks).toEqual({ kind: 'failed', stage: 'hooks', error: boom });
    const apply = await new RevisionEngine(new FakePhases(() => Promise.reject(boom))).run({ target, objects: [] });
    expect(apply).toEqual({ kind: 'failed', stage: 'apply', error: boom });
    const settle = await new RevisionEngine(new FakePhases(async () => applied)).run({ target, objects: [], settle: () => Promise.reject(boom) });
    expect(settle).toEqual({ kind: 'failed', stage: 'apply', error: boom });
    const prune = await new RevisionEngine(new FakePhases(async () => applied)).run({ target, objects: [], prune: () => Promise.reject(boom) });
    expect(prune).toEqual({ kind: 'failed', stage: 'prune', error: boom, report: applied });
  });

  it('a cancellation is thrown, not a result', async () => {
    const stop = new CancelledError('applying revision 2', { stage: 'apply' });
    await expect(new RevisionEngine(new FakePhases(() => Promise.reject(stop))).run({ target, objects: [] })).rejects.toBe(stop);
  });
});

/** the object level as a table: each object's answer by name (undefined: it existed after all) */
class FakeObjects implements ObjectApplier {
  readonly sent: string[] = [];
  readonly undone: string[] = [];
  constructor(private readonly answers: Record<string, ObjectResult['action'] | 'existed' | 'forbidden'>) {}
  async apply(_call: ObjectCall, p: Planned): Promise<ObjectResult | undefined> {
    this.sent.push(p.id);
    const a = this.answers[p.id] ?? 'configured';
    if (a === 'existed') return p.presumed ? undefined : { id: p.id, subject: p.subject, action: 'configured' };
    if (a === 'forbidden') return { id: p.id, subject: p.subject, action: 'failed', message: 'forbidden', transient: true, forbidden: true };
    return { id: p.id, subject: p.subject, action: a, ...(a === 'created' ? { written: { uid: `uid-${p.id}` } } : {}) };
  }
  async undoCreates(_call: ObjectCall, created: readonly Created[]): Promise<void> {
    this.undone.push(...created.map((c) => `${c.id}@${c.createdUid}`));
  }
}

const planned = (id: string, presumed = false): Planned => ({ id, subject: `v1 ConfigMap ns/${id}`, presumed }) as unknown as Planned;

function phaseCall(redecide: PhaseCall['redecide'] = async (e) => [...e]): PhaseCall & { readFirsts: number } {
  const call = {
    target,
    manager: 'hoist-bd',
    ensureNs: async () => true,
    signal: undefined,
    created: [] as Created[],
    redecide,
    readFirsts: 0,
    readFirst: () => void call.readFirsts++,
  };
  return call;
}

describe('PhaseEngine', () => {
  it('sends presumed creates first, then the rest with those that existed after all, read and decided', async () => {
    const objects = new FakeObjects({ a: 'created', b: 'existed' });
    const call = phaseCall();
    const results = await new PhaseEngine(objects, 4).apply(call, [planned('c'), planned('a', true), planned('b', true)]);
    expect(objects.sent).toEqual(['a', 'b', 'c', 'b']);
    expect(results.map((r) => `${r.id} ${r.action}`)).toEqual(['a created', 'c configured', 'b configured']);
    expect(call.created.map((c) => c.createdUid)).toEqual(['uid-a']);
    expect(call.readFirsts).toBe(1);
  });

  it('a refused takeover of one that existed after all undoes what the call created', async () => {
    const objects = new FakeObjects({ a: 'created', b: 'existed' });
    const refusal = new HoistError('conflicting owner', { stage: 'apply', code: 'conflicting-owner', terminal: true });
    const call = phaseCall(() => Promise.reject(refusal));
    await expect(new PhaseEngine(objects, 4).apply(call, [planned('a', true), planned('b', true)])).rejects.toBe(refusal);
    expect(objects.undone).toEqual(['a@uid-a']);
  });

  it('a create the actor may not make undoes the call and is refused as Forbidden', async () => {
    const objects = new FakeObjects({ a: 'created', b: 'forbidden' });
    const err = await new PhaseEngine(objects, 4).apply(phaseCall(), [planned('a', true), planned('b', true)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ObjectsError);
    expect((err as ObjectsError).code).toBe(ApplyCode.Forbidden);
    expect(objects.undone).toEqual(['a@uid-a']);
  });

  it('throws ApplyFailed naming each object that failed', async () => {
    const objects = new FakeObjects({});
    objects.apply = async (_c, p) => ({ id: p.id, subject: p.subject, action: p.id === 'x' ? 'failed' : 'configured', message: 'invalid', transient: false });
    const err = await new PhaseEngine(objects, 4).apply(phaseCall(), [planned('x'), planned('y')]).catch((e: unknown) => e);
    expect((err as ObjectsError).code).toBe(ApplyCode.ApplyFailed);
    expect((err as HoistError).terminal).toBe(true);
  });
});
