/**
 * Every failure mode of the pipeline, one row each, through the real BundleDeploymentReconciler
 * over the fakes of test/support/fakes (no cluster): the stage that fails (resolve, fetch,
 * process, apply, observe) × transient / terminal × install / upgrade × spec.upgrade.onFailure.
 * Each row asserts the conditions, whether the reconcile throws (the controller retries with
 * backoff), requeues or waits for a change, the active revision and the live objects after it,
 * the applies made (a rollback is an apply of revision 1 after the failed one), and the events.
 *
 * For observe, "transient" is a new revision not healthy yet within progressDeadline and
 * "terminal" the same revision once the world's clock is past it. Apply failures happen after
 * the objects were written (a failure part-way); the refusals before any write are in the second
 * table. Kubernetes' own behaviour on these paths is the e2e suite's (rollback, upgrade,
 * crash-safety); the decisions alone are decide.test.ts's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ANNOTATION_HOOK, type BundleDeploymentSpec, type OnFailure } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { HoistError, type Stage } from '../../../src/util/errors.ts';
import { ApplyCode, ConflictingOwnerError, ObjectsError } from '../../../src/apply/errors.ts';
import { ProcessCode } from '../../../src/processors/errors.ts';
import { SourceCode } from '../../../src/sources/errors.ts';
import { FAKE_HEALTH } from '../../support/fakes/managed.ts';
import { FakeWorld, type Outcome } from '../../support/fakes/world.ts';

type Mode = 'resolve' | 'fetch' | 'process' | 'apply' | 'observe';
type Kind = 'transient' | 'terminal';
type Action = 'install' | 'upgrade';
/** backoff: the reconcile throws; requeue: rate-limited requeue; after: requeueAfter (ms ≤ the deadline); wait: until something changes */
type Then = 'backoff' | 'requeue' | 'after' | 'wait';

interface Expected {
  then: Then;
  /** "status/reason" of Installed and Progressing, and of the condition of the failing stage (Resolved, Unpacked, Healthy) */
  installed: string;
  progressing: string;
  stage: string;
  /** status.activeRevision.number after the failure */
  active: number | undefined;
  /** the live ConfigMaps of namespace app, `app` with its data.v */
  live: string;
  /** the revisions applied by the failing reconcile(s): [2, 1] is revision 2 failing and 1 rolled back to */
  applies: number[];
  /** the event reasons the failing reconcile(s) recorded */
  events: string[];
}

const V1 = 'https://bundles.example/v1.tgz';
const V2 = 'https://bundles.example/v2.tgz';
const PROGRESS_DEADLINE_MS = 10 * 60_000;

function configMap(name: string, v: string, health?: 'InProgress'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'app', ...(health ? { annotations: { [FAKE_HEALTH]: health } } : {}) },
    data: { v },
  };
}

function spec(url: string, onFailure: OnFailure): BundleDeploymentSpec {
  return { format: 'plain', sources: [{ kind: 'http', http: { url } }], upgrade: { onFailure, progressDeadline: '10m' } };
}

/** the failure a stage meets, as its implementation reports it: a HoistError naming stage and subject */
function failure(mode: Exclude<Mode, 'observe'>, kind: Kind): { err: HoistError; stage: Stage; subject: string } {
  const subject = { resolve: V2, fetch: V2, process: 'templates/app.yaml', apply: 'v1 ConfigMap app/app' }[mode];
  const code = { resolve: SourceCode.HttpStatus, fetch: SourceCode.DigestMismatch, process: ProcessCode.ParseError, apply: ApplyCode.ApplyFailed }[mode];
  const err = new HoistError(`${kind} ${mode} failure`, { stage: mode, code, subject, terminal: kind === 'terminal' });
  return { err, stage: mode, subject };
}

const worlds: FakeWorld[] = [];
afterEach(async () => {
  await Promise.all(worlds.splice(0).map((w) => w.dispose()));
});

function live(w: FakeWorld): string {
  return w.kube
    .listNow<KubeObject & { data?: { v?: string } }>({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'app' })
    .map((o) => (o.metadata.name === 'app' ? `app=${o.data?.v}` : o.metadata.name))
    .sort()
    .join(' ');
}

function said(w: FakeWorld, type: 'Installed' | 'Progressing' | 'Resolved' | 'Unpacked' | 'Healthy'): string {
  const c = w.condition('demo', type);
  return `${c?.status}/${c?.reason}`;
}

function then(o: Outcome): Then {
  if (o.error) return 'backoff';
  if (o.result.requeue) return 'requeue';
  return o.result.requeueAfter !== undefined ? 'after' : 'wait';
}

/**
 * Installs v1 first when upgrading, then makes `mode` fail for v2 (a new spec generation) and
 * reconciles; for observe "terminal", once more after progressDeadline has passed.
 */
async function run(
  mode: Mode,
  kind: Kind,
  action: Action,
  onFailure: OnFailure,
): Promise<{ w: FakeWorld; outcome: Outcome; applies: number[]; events: string[]; named?: string }> {
  const w = await FakeWorld.create();
  worlds.push(w);
  w.source.publish(V1, [configMap('app', '1'), configMap('v1-only', '1')]);
  w.source.publish(V2, [configMap('app', '2', mode === 'observe' ? 'InProgress' : undefined), configMap('v2-only', '2')]);
  if (action === 'upgrade') {
    w.put('demo', spec(V1, onFailure));
    expect((await w.reconcile('demo')).error).toBeUndefined();
    expect([said(w, 'Installed'), said(w, 'Healthy'), said(w, 'Progressing'), live(w)]).toEqual([
      'True/Installed',
      'True/Healthy',
      'False/Succeeded',
      'app=1 v1-only',
    ]);
  }
  const appliesBefore = w.applier.applies.length;
  const eventsBefore = w.events.events.length;
  let named: string | undefined;
  if (mode !== 'observe') {
    const { err, stage, subject } = failure(mode, kind);
    named = `${stage} ${subject}: `;
    if (mode === 'resolve') w.source.failResolve.set(V2, err);
    if (mode === 'fetch') w.source.failFetch.set(V2, err);
    if (mode === 'process') w.processor.fail = err;
    if (mode === 'apply') w.applier.fail({ err, revision: action === 'install' ? 1 : 2, afterWrites: true });
  }
  w.put('demo', spec(V2, onFailure));
  let outcome = await w.reconcile('demo');
  if (mode === 'observe' && kind === 'terminal') {
    expect(outcome.result?.requeueAfter).toBeLessThanOrEqual(PROGRESS_DEADLINE_MS);
    await w.advance(PROGRESS_DEADLINE_MS);
    outcome = await w.reconcile('demo');
  }
  return {
    w,
    outcome,
    applies: w.applier.applies.slice(appliesBefore).map((a) => a.revision),
    events: w.events.events.slice(eventsBefore).map((e) => e.reason),
    ...(named ? { named } : {}),
  };
}

// what a resolve, fetch or process failure leaves, whatever onFailure says: nothing installed is touched
const beforeApply = (stage: string, kind: Kind, action: Action): Expected => ({
  then: kind === 'transient' ? 'backoff' : 'wait',
  installed: action === 'install' ? 'False/Pending' : 'True/Installed',
  progressing: kind === 'transient' ? 'True/Retrying' : 'False/Blocked',
  stage,
  active: action === 'install' ? undefined : 1,
  live: action === 'install' ? '' : 'app=1 v1-only',
  applies: [],
  events: [],
});

const rows: Array<[Mode, Kind, Action, OnFailure, Expected]> = [];
for (const [mode, stage] of [
  ['resolve', 'False/ResolveFailed'],
  ['fetch', 'False/FetchFailed'],
  ['process', 'False/ProcessFailed'],
] as const) {
  for (const kind of ['transient', 'terminal'] as const) {
    for (const action of ['install', 'upgrade'] as const) {
      for (const onFailure of ['Rollback', 'Hold'] as const) rows.push([mode, kind, action, onFailure, beforeApply(stage, kind, action)]);
    }
  }
}
// one row per line, a table
// prettier-ignore
rows.push(
  // apply: nothing to roll back to on install; Rollback retries a transient failure within the deadline, rolls back a terminal one; Hold retries both
  ['apply', 'transient', 'install', 'Rollback', { then: 'backoff', installed: 'False/ApplyFailed', progressing: 'True/Retrying', stage: 'Unknown/Unknown', active: undefined, live: 'app=2 v2-only', applies: [1], events: ['ApplyFailed'] }],
  ['apply', 'transient', 'install', 'Hold', { then: 'backoff', installed: 'False/ApplyFailed', progressing: 'True/Retrying', stage: 'Unknown/Unknown', active: undefined, live: 'app=2 v2-only', applies: [1], events: ['ApplyFailed'] }],
  ['apply', 'terminal', 'install', 'Rollback', { then: 'wait', installed: 'False/ApplyFailed', progressing: 'False/Blocked', stage: 'Unknown/Unknown', active: undefined, live: 'app=2 v2-only', applies: [1], events: ['ApplyFailed'] }],
  ['apply', 'terminal', 'install', 'Hold', { then: 'requeue', installed: 'False/ApplyFailed', progressing: 'True/Retrying', stage: 'Unknown/Unknown', active: undefined, live: 'app=2 v2-only', applies: [1], events: ['ApplyFailed'] }],
  ['apply', 'transient', 'upgrade', 'Rollback', { then: 'backoff', installed: 'True/Installed', progressing: 'True/Retrying', stage: 'True/Healthy', active: 1, live: 'app=2 v1-only v2-only', applies: [2], events: [] }],
  ['apply', 'transient', 'upgrade', 'Hold', { then: 'backoff', installed: 'False/ApplyFailed', progressing: 'True/Retrying', stage: 'True/Healthy', active: 1, live: 'app=2 v1-only v2-only', applies: [2], events: ['ApplyFailed'] }],
  ['apply', 'terminal', 'upgrade', 'Rollback', { then: 'wait', installed: 'True/Installed', progressing: 'False/RolledBack', stage: 'True/Healthy', active: 1, live: 'app=1 v1-only', applies: [2, 1], events: ['RolledBack'] }],
  ['apply', 'terminal', 'upgrade', 'Hold', { then: 'requeue', installed: 'False/ApplyFailed', progressing: 'True/Retrying', stage: 'True/Healthy', active: 1, live: 'app=2 v1-only v2-only', applies: [2], events: ['ApplyFailed'] }],
  // observe: applied, not healthy; within the deadline it rolls out, past it Rollback goes back to a good revision and otherwise blocks
  ['observe', 'transient', 'install', 'Rollback', { then: 'after', installed: 'True/Installed', progressing: 'True/RollingOut', stage: 'False/Progressing', active: 1, live: 'app=2 v2-only', applies: [1], events: ['Installed'] }],
  ['observe', 'transient', 'install', 'Hold', { then: 'after', installed: 'True/Installed', progressing: 'True/RollingOut', stage: 'False/Progressing', active: 1, live: 'app=2 v2-only', applies: [1], events: ['Installed'] }],
  ['observe', 'terminal', 'install', 'Rollback', { then: 'wait', installed: 'True/Installed', progressing: 'False/Blocked', stage: 'False/Progressing', active: 1, live: 'app=2 v2-only', applies: [1, 1], events: ['Installed', 'ProgressDeadlineExceeded'] }],
  ['observe', 'terminal', 'install', 'Hold', { then: 'wait', installed: 'True/Installed', progressing: 'False/Blocked', stage: 'False/Progressing', active: 1, live: 'app=2 v2-only', applies: [1, 1], events: ['Installed', 'ProgressDeadlineExceeded'] }],
  ['observe', 'transient', 'upgrade', 'Rollback', { then: 'after', installed: 'True/Installed', progressing: 'True/RollingOut', stage: 'False/Progressing', active: 2, live: 'app=2 v2-only', applies: [2], events: ['Installed'] }],
  ['observe', 'transient', 'upgrade', 'Hold', { then: 'after', installed: 'True/Installed', progressing: 'True/RollingOut', stage: 'False/Progressing', active: 2, live: 'app=2 v2-only', applies: [2], events: ['Installed'] }],
  ['observe', 'terminal', 'upgrade', 'Rollback', { then: 'wait', installed: 'True/Installed', progressing: 'False/RolledBack', stage: 'True/Healthy', active: 1, live: 'app=1 v1-only', applies: [2, 2, 1], events: ['Installed', 'RolledBack'] }],
  ['observe', 'terminal', 'upgrade', 'Hold', { then: 'wait', installed: 'True/Installed', progressing: 'False/Blocked', stage: 'False/Progressing', active: 2, live: 'app=2 v2-only', applies: [2, 2], events: ['Installed', 'ProgressDeadlineExceeded'] }],
);

/** what a row compares: the outcome and the state it left */
function summary(w: FakeWorld, outcome: Outcome, applies: number[], events: string[]): Omit<Expected, 'stage'> {
  return {
    then: then(outcome),
    installed: said(w, 'Installed'),
    progressing: said(w, 'Progressing'),
    active: w.bd('demo')?.status?.activeRevision?.number,
    live: live(w),
    applies,
    events,
  };
}

const stageCondition = (mode: Mode): 'Resolved' | 'Unpacked' | 'Healthy' =>
  mode === 'resolve' ? 'Resolved' : mode === 'fetch' || mode === 'process' ? 'Unpacked' : 'Healthy';

describe('pipeline failures over fakes: stage × transient/terminal × install/upgrade × onFailure', () => {
  it.each(rows)('%s %s, %s, onFailure %s', async (mode, kind, action, onFailure, want) => {
    const { w, outcome, applies, events, named } = await run(mode, kind, action, onFailure);
    expect({ ...summary(w, outcome, applies, events), stage: said(w, stageCondition(mode)) }).toEqual(want);
    const progressing = w.condition('demo', 'Progressing')?.message ?? '';
    if (named) {
      // the failure is named where people look: its stage and subject, in Progressing and in the stage's own condition
      expect(progressing).toContain(named);
      if (mode !== 'apply') expect(w.condition('demo', stageCondition(mode))?.message).toContain(named);
      if (outcome.error) expect(outcome.error).toMatchObject({ stage: mode });
    } else if (kind === 'terminal') {
      // past the deadline: which revision, which deadline, and which object was not ready
      expect(progressing).toMatch(/revision \d not healthy within progressDeadline 10m: 1 not ready: ConfigMap app\/app/);
    } else {
      expect(outcome.result?.requeueAfter).toBeGreaterThan(0);
      expect(outcome.result?.requeueAfter).toBeLessThanOrEqual(PROGRESS_DEADLINE_MS);
      expect(w.condition('demo', 'Healthy')?.message).toContain('ConfigMap app/app');
    }
    // a failure of anything but the new revision's own objects leaves the stored revisions as they were
    if (mode !== 'apply' && mode !== 'observe') expect(w.revisions.numbers('demo')).toEqual(action === 'install' ? [] : [1]);
  });
});

describe('pipeline failures over fakes: what the failure’s code and the time it lasts decide', () => {
  /** v1 installed (upgrade) or not (install), then v2 under onFailure Rollback meets `fail` */
  async function upgradeFails(
    action: Action,
    fail: (w: FakeWorld) => void,
    hook?: KubeObject,
  ): Promise<{ w: FakeWorld; outcome: Outcome; applies: () => number[]; events: () => string[] }> {
    const w = await FakeWorld.create();
    worlds.push(w);
    w.source.publish(V1, [configMap('app', '1'), configMap('v1-only', '1')]);
    w.source.publish(V2, [configMap('app', '2'), configMap('v2-only', '2'), ...(hook ? [hook] : [])]);
    if (action === 'upgrade') {
      w.put('demo', spec(V1, 'Rollback'));
      expect((await w.reconcile('demo')).error).toBeUndefined();
    }
    const appliesBefore = w.applier.applies.length;
    const eventsBefore = w.events.events.length;
    fail(w);
    w.put('demo', spec(V2, 'Rollback'));
    const outcome = await w.reconcile('demo');
    return {
      w,
      outcome,
      applies: () => w.applier.applies.slice(appliesBefore).map((a) => a.revision),
      events: () => w.events.events.slice(eventsBefore).map((e) => e.reason),
    };
  }
  const refused = { subject: 'v1 ConfigMap app/app', message: 'refused' };

  it('the acting account forbidden on upgrade: not retried as transient, rolled back, "stays installed"', async () => {
    const { w, outcome, applies, events } = await upgradeFails('upgrade', (w) =>
      w.applier.fail({ err: new ObjectsError(ApplyCode.Forbidden, [refused], { terminal: false }), revision: 2 }),
    );
    expect(summary(w, outcome, applies(), events())).toEqual({
      then: 'wait',
      installed: 'False/ApplyFailed',
      progressing: 'False/RolledBack',
      active: 1,
      live: 'app=1 v1-only',
      applies: [2, 1],
      events: ['RolledBack'],
    });
    expect(w.condition('demo', 'Installed')?.message).toMatch(/^apply v1 ConfigMap app\/app: v1 ConfigMap app\/app: refused; revision 1 stays installed$/);
  });

  it('a conflicting owner on install: blocked, looked at again after a minute', async () => {
    const { w, outcome, applies, events } = await upgradeFails('install', (w) =>
      w.applier.fail({ err: new ConflictingOwnerError([{ subject: refused.subject, owner: 'BundleDeployment other', why: 'refused' }]) }),
    );
    expect(outcome.result).toEqual({ requeueAfter: 60_000 });
    expect(summary(w, outcome, applies(), events())).toEqual({
      then: 'after',
      installed: 'False/ConflictingOwner',
      progressing: 'False/Blocked',
      active: undefined,
      live: '',
      applies: [1],
      events: ['ConflictingOwner'],
    });
  });

  it('a conflicting owner on upgrade: the installed revision stays, named ConflictingOwner', async () => {
    const { w, outcome, applies, events } = await upgradeFails('upgrade', (w) =>
      w.applier.fail({ err: new ConflictingOwnerError([{ subject: refused.subject, owner: 'BundleDeployment other', why: 'refused' }]), revision: 2 }),
    );
    expect(summary(w, outcome, applies(), events())).toEqual({
      then: 'wait',
      installed: 'False/ConflictingOwner',
      progressing: 'False/RolledBack',
      active: 1,
      live: 'app=1 v1-only',
      applies: [2, 1],
      events: ['RolledBack'],
    });
  });

  it('a transient apply failure for longer than progressDeadline: retried until then, then rolled back', async () => {
    const { w, outcome, applies, events } = await upgradeFails('upgrade', (w) =>
      w.applier.fail({ err: new ObjectsError(ApplyCode.ApplyFailed, [refused], { terminal: false }), revision: 2, afterWrites: true }),
    );
    expect([then(outcome), said(w, 'Installed'), said(w, 'Progressing')]).toEqual(['backoff', 'True/Installed', 'True/Retrying']);
    const since = w.bd('demo')?.status?.attemptedRevision?.failingSince;
    expect(w.condition('demo', 'Progressing')?.message).toContain(`rolled back to revision 1 if still failing 10m after ${since}`);
    await w.advance(PROGRESS_DEADLINE_MS / 2);
    expect(then(await w.reconcile('demo'))).toBe('backoff');
    // the deadline counts from the first failure, not from the last one
    expect(w.bd('demo')?.status?.attemptedRevision?.failingSince).toBe(since);
    await w.advance(PROGRESS_DEADLINE_MS / 2);
    const last = await w.reconcile('demo');
    expect(summary(w, last, applies(), events())).toEqual({
      then: 'wait',
      installed: 'True/Installed',
      progressing: 'False/RolledBack',
      active: 1,
      live: 'app=1 v1-only',
      applies: [2, 2, 2, 1],
      events: ['RolledBack'],
    });
  });

  it('a failing pre-upgrade hook: nothing of the new revision applied, rolled back', async () => {
    // a hook as the helm processor keeps it (src/processors/helm/hooks.ts)
    const hook: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate', namespace: 'app', annotations: { [ANNOTATION_HOOK]: 'pre-upgrade' } },
    };
    const { w, outcome, applies, events } = await upgradeFails('upgrade', (w) => w.hooks.failing.set('pre-upgrade', 'BackoffLimitExceeded'), hook);
    expect(summary(w, outcome, applies(), events())).toEqual({
      then: 'wait',
      installed: 'True/Installed',
      progressing: 'False/RolledBack',
      active: 1,
      live: 'app=1 v1-only',
      applies: [1],
      events: ['HookFailed', 'RolledBack'],
    });
    expect(w.hooks.runs.map((r) => `${r.event} ${r.name} ${r.result}`)).toEqual(['pre-upgrade migrate Failed']);
    expect(w.condition('demo', 'Progressing')?.message).toContain('apply pre-upgrade hook batch/v1 Job app/migrate: ');
  });
});
