/**
 * The pure parts of the user verbs: pinned sources, the rollback patch, the history table's
 * join of store and status, the diff's cleaning of server fields, formatting, completion scripts
 * (checked by the real bash and zsh parsers when installed) and usage errors (exit 2).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { pinSource, revisionSpec } from '../../../src/sources/pin.ts';
import { rollbackPatch, rollback } from '../../../src/cli/verbs/rollback.ts';
import { historyEntries, describeHooks, describeSource } from '../../../src/cli/verbs/history.ts';
import { clean, diffEntries } from '../../../src/cli/verbs/diff-plan.ts';
import type { PruneDecision } from '../../../src/apply/prune.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import type { RevisionPreview } from '../../../src/apply/preview.ts';
import { age, table, type Io } from '../../../src/cli/verbs/common.ts';
import { bashCompletion, zshCompletion, completion } from '../../../src/cli/verbs/completion.ts';
import { get } from '../../../src/cli/verbs/get.ts';
import { pause } from '../../../src/cli/verbs/pause.ts';
import { diff, summary } from '../../../src/cli/verbs/diff.ts';
import { events, byTime, type EventObject } from '../../../src/cli/verbs/events.ts';
import { handled, outcome, reconcile, requestToken, retry } from '../../../src/cli/verbs/reconcile.ts';
import { tree } from '../../../src/cli/verbs/tree.ts';
import { dependsColumn } from '../../../src/cli/verbs/get.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const COMMIT = 'b'.repeat(40);

function collect(): Io & { stdout: string; stderr: string } {
  const io = { stdout: '', stderr: '', out: (t: string) => void (io.stdout += t), err: (t: string) => void (io.stderr += t) };
  return io;
}

describe('pinSource', () => {
  it('pins a tag to the resolved digest, a branch to its commit, a URL to its sha256', () => {
    expect(pinSource({ kind: 'image', image: { ref: 'quay.io/x/b:v1' } }, { kind: 'image', digest: DIGEST })).toEqual({
      kind: 'image',
      image: { ref: `quay.io/x/b:v1@${DIGEST}` },
    });
    expect(pinSource({ kind: 'git', git: { repository: 'https://g/r', ref: { branch: 'main' }, directory: 'm' } }, { kind: 'git', commit: COMMIT })).toEqual({
      kind: 'git',
      git: { repository: 'https://g/r', ref: { commit: COMMIT }, directory: 'm' },
    });
    expect(pinSource({ kind: 'http', http: { url: 'https://h/b.tgz' } }, { kind: 'http', sha256: 'c'.repeat(64) })).toEqual({
      kind: 'http',
      http: { url: 'https://h/b.tgz', sha256: 'c'.repeat(64) },
    });
  });
  it('pins a semver range to the digest or commit it resolved to, without the range', () => {
    const image = { kind: 'image' as const, image: { ref: 'quay.io/x/b', semver: '>=1.9 <2.0', layerSelector: { mediaType: 'application/x' } } };
    expect(pinSource(image, { kind: 'image', digest: DIGEST, ref: `quay.io/x/b:1.9.1@${DIGEST}` })).toEqual({
      kind: 'image',
      image: { ref: `quay.io/x/b@${DIGEST}`, layerSelector: { mediaType: 'application/x' } },
    });
    expect(
      pinSource({ kind: 'git', git: { repository: 'https://g/r', ref: { semver: '~1.9' } } }, { kind: 'git', commit: COMMIT, ref: 'refs/tags/v1.9.1' }),
    ).toEqual({ kind: 'git', git: { repository: 'https://g/r', ref: { commit: COMMIT } } });
  });
  it('keeps a spec that already names a digest, auth and a destination', () => {
    const src = { kind: 'image' as const, image: { ref: `r/b@${DIGEST}`, auth: { secretRef: { name: 's' } } }, destination: 'sub' };
    expect(pinSource(src, { kind: 'image', digest: DIGEST })).toEqual(src);
    expect(pinSource({ kind: 'http', http: { url: 'u' }, destination: '' }, undefined)).toEqual({ kind: 'http', http: { url: 'u' }, destination: '' });
  });
  it('revisionSpec keeps format, installNamespace and config, and nothing else', () => {
    const spec = {
      format: 'helm' as const,
      installNamespace: 'ns',
      config: { helm: { values: { a: 1 } } },
      paused: true,
      sources: [{ kind: 'http' as const, http: { url: 'u' } }],
    };
    expect(revisionSpec(spec, [{ kind: 'http', sha256: 'd'.repeat(64) }])).toEqual({
      format: 'helm',
      installNamespace: 'ns',
      config: { helm: { values: { a: 1 } } },
      sources: [{ kind: 'http', http: { url: 'u', sha256: 'd'.repeat(64) } }],
    });
  });
});

describe('rollbackPatch', () => {
  const bd = {
    metadata: { name: 'x', resourceVersion: '7' },
    spec: {
      format: 'helm',
      installNamespace: 'ns',
      config: { helm: { values: { a: 1, b: 2 } } },
      sources: [{ kind: 'http', http: { url: 'v2' } }],
      paused: false,
    },
  } as unknown as BundleDeployment;
  it('replaces whole members (no map merging), removes absent ones, guarded by resourceVersion', () => {
    const ops = rollbackPatch(bd, {
      format: 'helm',
      config: { helm: { values: { a: 1 } } },
      sources: [{ kind: 'http', http: { url: 'v1', sha256: 'e'.repeat(64) } }],
    });
    expect(ops).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'remove', path: '/spec/installNamespace' },
      { op: 'add', path: '/spec/config', value: { helm: { values: { a: 1 } } } },
      { op: 'add', path: '/spec/sources', value: [{ kind: 'http', http: { url: 'v1', sha256: 'e'.repeat(64) } }] },
    ]);
  });
  it('is only the guard when the spec already names the revision', () => {
    expect(
      rollbackPatch(bd, {
        format: 'helm',
        installNamespace: 'ns',
        config: { helm: { values: { a: 1, b: 2 } } },
        sources: [{ kind: 'http', http: { url: 'v2' } }],
      }),
    ).toHaveLength(1);
  });
});

describe('historyEntries', () => {
  it('joins stored revisions with status phases; a revision only in status cannot be rolled back to', () => {
    const entries = historyEntries(
      [
        {
          number: 1,
          contentDigest: 'sha256:1',
          storedAt: '2026-01-01T00:00:00Z',
          spec: { format: 'plain', sources: [{ kind: 'http', http: { url: 'u', sha256: 'f'.repeat(64) } }] },
        },
        { number: 2, contentDigest: 'sha256:2' },
      ],
      {
        activeRevision: { number: 2, contentDigest: 'sha256:2', objects: 3, appliedAt: '2026-01-02T00:00:00Z' },
        revisions: [
          { number: 2, contentDigest: 'sha256:2', phase: 'Active' },
          { number: 3, contentDigest: 'sha256:3', phase: 'Failed' },
        ],
      },
    );
    expect(entries.map((e) => [e.revision, e.phase, e.rollback, e.objects])).toEqual([
      [1, 'Stored', true, undefined],
      [2, 'Active', false, 3],
      [3, 'Failed', false, undefined],
    ]);
    expect(entries[1]!.appliedAt).toBe('2026-01-02T00:00:00Z');
    expect(describeSource(entries[0]!.sources![0]!)).toBe('http u sha256:ffffffffffff');
  });

  it('shows the hooks each revision ran, and those of a transition under way', () => {
    const run = (name: string, result: 'Succeeded' | 'Failed' | 'Running', deleted?: boolean) => ({
      event: 'pre-upgrade' as const,
      kind: 'Job',
      name,
      result,
      startedAt: 't',
      ...(deleted ? { deleted } : {}),
    });
    const entries = historyEntries(
      [
        { number: 1, contentDigest: 'sha256:1' },
        { number: 2, contentDigest: 'sha256:2' },
      ],
      {
        revisions: [{ number: 1, contentDigest: 'sha256:1', phase: 'Active', hooks: [run('migrate', 'Succeeded', true)] }],
        transition: { revision: 2, contentDigest: 'sha256:2', startedAt: 't', hooks: [run('migrate', 'Running')] },
      },
    );
    expect(entries.map((e) => describeHooks(e.hooks))).toEqual(['pre-upgrade Job migrate Succeeded (deleted)', 'pre-upgrade Job migrate Running']);
  });
});

describe('clean', () => {
  it('drops server bookkeeping, status and the revision annotation, keeps other annotations', () => {
    const text = clean({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'c',
        uid: 'u',
        resourceVersion: '1',
        generation: 2,
        creationTimestamp: 't',
        managedFields: [{}],
        annotations: { 'core.rukpak.io/revision': '3', keep: 'y' },
      },
      status: {},
      data: { a: 'b' },
    });
    expect(text).toBe('apiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  annotations:\n    keep: y\n  name: c\n');
    expect(clean(undefined)).toBe('');
  });
});

describe('diffEntries: what a prune would keep', () => {
  const live = (name: string, annotations: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'ns', labels: { 'core.rukpak.io/owner-name': 'web', 'core.rukpak.io/lineage': 'web' }, annotations },
    data: { a: 'b' },
  });
  const decision = (obj: KubeObject, action: PruneDecision['action'], extra: Partial<PruneDecision> = {}): PruneDecision => ({
    obj,
    id: `/ConfigMap/ns/${obj.metadata.name}`,
    subject: `v1 ConfigMap ns/${obj.metadata.name}`,
    action,
    live: obj,
    ...extra,
  });
  const preview = (prune: PruneDecision[]): RevisionPreview => ({
    revision: 2,
    isNew: true,
    steps: [],
    hooks: [],
    hasHooks: false,
    objects: [],
    prune,
    skippedOptional: [],
  });

  it('a kept object is shown losing the owner label, its data as it is; a pruned one deleted; both in the summary', () => {
    const kept = live('data', { 'helm.sh/resource-policy': 'keep' });
    const entries = diffEntries(
      preview([
        decision(kept, 'release', {
          policy: 'helm.sh/resource-policy: keep',
          message: 'kept: helm.sh/resource-policy: keep; left in place, no longer managed',
        }),
        decision(live('old'), 'delete'),
      ]),
    );
    expect(entries.map((e) => [e.subject, e.action])).toEqual([
      ['v1 ConfigMap ns/data', 'keep'],
      ['v1 ConfigMap ns/old', 'prune'],
    ]);
    expect(entries[0]!.live).toContain('core.rukpak.io/owner-name: web');
    expect(entries[0]!.merged).not.toContain('core.rukpak.io/owner-name');
    expect(entries[0]!.merged).toContain('core.rukpak.io/lineage: web');
    expect(entries[0]!.merged).toContain('a: b');
    expect(entries[1]!.merged).toBe('');
    expect(summary(entries)).toBe(
      '1 kept by retention policy, 1 pruned\n  v1 ConfigMap ns/data: kept by retention policy: left the bundle; kept: helm.sh/resource-policy: keep; left in place, no longer managed\n',
    );
  });
});

describe('formatting', () => {
  it('ages like kubectl', () => {
    const now = new Date('2026-01-10T00:00:00Z');
    expect([
      age('2026-01-09T23:59:15Z', now),
      age('2026-01-09T23:30:00Z', now),
      age('2026-01-09T12:00:00Z', now),
      age('2026-01-01T00:00:00Z', now),
      age(undefined, now),
    ]).toEqual(['45s', '30m', '12h', '9d', '<unknown>']);
  });
  it('pads columns with three spaces', () => {
    expect(
      table([
        ['NAME', 'X'],
        ['a-long-name', 'y'],
      ]),
    ).toBe('NAME          X\na-long-name   y\n');
  });
});

describe('reconcile and retry', () => {
  const bd = (status: BundleDeployment['status'], generation = 2) =>
    ({ metadata: { name: 'x', generation }, spec: { format: 'plain', sources: [] }, status }) as unknown as BundleDeployment;
  const c = (type: string, status: string, reason: string, message = 'm') =>
    ({ type, status, reason, message, observedGeneration: 2, lastTransitionTime: 't' }) as never;
  it('tokens are new every time, the time first', () => {
    const now = new Date('2026-11-28T10:00:00.123Z');
    const [a, b] = [requestToken(now), requestToken(now)];
    expect(a).toMatch(/^2026-11-28T10:00:00\.123Z-[0-9a-f]{6}$/);
    expect(a).not.toBe(b);
  });
  it('waits for the token echoed and done at the current generation', () => {
    const done = [c('Installed', 'True', 'Installed'), c('Progressing', 'False', 'Succeeded')];
    expect(handled(bd({ observedGeneration: 2, lastHandledRequest: 't1', conditions: done }), 't1')).toBe(true);
    expect(handled(bd({ observedGeneration: 2, lastHandledRequest: 't0', conditions: done }), 't1')).toBe(false);
    expect(
      handled(
        bd({ observedGeneration: 2, lastHandledRequest: 't1', conditions: [c('Installed', 'True', 'Installed'), c('Progressing', 'True', 'RollingOut')] }),
        't1',
      ),
    ).toBe(false);
    expect(handled(bd({ observedGeneration: 1, lastHandledRequest: 't1', conditions: done }), 't1')).toBe(false);
  });
  it('says how it came out: Succeeded is success, anything else names Progressing and Installed', () => {
    expect(
      outcome(bd({ conditions: [c('Installed', 'True', 'Installed'), c('Progressing', 'False', 'Succeeded', 'revision 2 is installed and healthy')] })),
    ).toEqual({ ok: true, text: 'Progressing=False/Succeeded: revision 2 is installed and healthy' });
    const failed = outcome(
      bd({
        conditions: [
          c('Installed', 'True', 'Installed', 'revision 1: 1 objects (revision 2 rolled back)'),
          c('Progressing', 'False', 'RolledBack', 'revision 2 rolled back to 1: denied'),
        ],
      }),
    );
    expect(failed.ok).toBe(false);
    expect(failed.text).toBe(
      'Progressing=False/RolledBack: revision 2 rolled back to 1: denied\n  Installed=True/Installed: revision 1: 1 objects (revision 2 rolled back)',
    );
  });
});

describe('get -o wide: DEPENDS', () => {
  const c = (type: string, status: string, reason: string) => ({ type, status, reason, message: '', observedGeneration: 1, lastTransitionTime: 't' });
  const bd = (name: string, extra: Partial<BundleDeployment['spec']> = {}, progressing = 'Succeeded') =>
    ({
      metadata: { name, generation: 1 },
      spec: { format: 'plain', sources: [], ...extra },
      status: { observedGeneration: 1, conditions: [c('Installed', 'True', 'Installed'), c('Progressing', 'False', progressing)] },
    }) as unknown as BundleDeployment;
  const known = new Map([
    ['crds', bd('crds')],
    ['operator', bd('operator', {}, 'RolledBack')],
    ['paused', bd('paused', { paused: true })],
  ]);
  it.each([
    [[], '<none>'],
    [[{ name: 'crds' }, { name: 'operator' }], 'crds=ready,operator=failed'],
    [[{ name: 'ghost' }, { name: 'paused' }], 'ghost=not found,paused=paused'],
    [[{ name: 'crds', readyExpr: 'dep.metadata.generation > 5' }], 'crds=readyExpr false'],
    [[{ name: 'crds', readyExpr: 'dep.(' }], 'dependsOn invalid (see PROGRESSING)'],
  ])('%j → %s', (dependsOn, want) => {
    expect(dependsColumn(bd('app', { dependsOn }), (n) => known.get(n))).toBe(want);
  });
});

describe('events', () => {
  it('orders Events by when they were last seen, whichever field says it', () => {
    const e = (name: string, t: Partial<EventObject>) => ({ apiVersion: 'v1', kind: 'Event', metadata: { name }, involvedObject: {}, ...t }) as EventObject;
    const list = [
      e('c', { lastTimestamp: '2026-01-01T00:00:03Z' }),
      e('a', { eventTime: '2026-01-01T00:00:01.5Z' }),
      e('none', {}),
      e('b', { series: { lastObservedTime: '2026-01-01T00:00:02Z' }, lastTimestamp: '2026-01-01T00:00:00Z' }),
    ];
    expect(byTime(list).map((x) => x.metadata.name)).toEqual(['a', 'b', 'c', 'none']);
  });
});

describe('completion', () => {
  it.each([
    ['bash', bashCompletion(), '/bin/bash'],
    ['zsh', zshCompletion(), '/bin/zsh'],
  ])('the %s script parses and names every verb', (_shell, script, shell) => {
    for (const verb of ['get', 'pause', 'resume', 'rollback', 'history', 'reconcile', 'retry', 'tree', 'events', 'diff', 'completion'])
      expect(script).toContain(verb);
    if (!existsSync(shell)) return; // the parser check needs the shell; the content checks above still ran
    execFileSync(shell, ['-n'], { input: script });
  });
  it('bash completes verbs and their flags', () => {
    const complete = (...words: string[]): string =>
      execFileSync('/bin/bash', [
        '-c',
        `${bashCompletion()}\nCOMP_WORDS=(${words.map((w) => `"${w}"`).join(' ')}); COMP_CWORD=${words.length - 1}; _hoist; echo "\${COMPREPLY[@]}"`,
      ])
        .toString()
        .trim();
    expect(complete('hoist', 'ro')).toBe('rollback');
    expect(complete('hoist', 'rollback', '--t')).toBe('--to');
    expect(complete('hoist', 'get', '-o', '')).toBe('wide name yaml json');
  });
  it('prints the script for a known shell; refuses others with exit 2', async () => {
    const io = collect();
    expect(await completion(['bash'], io)).toBe(0);
    expect(io.stdout).toBe(bashCompletion());
    const bad = collect();
    expect(await completion(['fish'], bad)).toBe(2);
    expect(bad.stderr).toContain('completion takes one shell: bash or zsh');
  });
});

describe('usage errors exit 2 before any connection', () => {
  it.each([
    ['get', get, ['a', 'b'], 'at most one NAME'],
    ['get', get, ['-o', 'xml'], 'unknown output format'],
    ['pause', pause, ['x'], '--reason is required'],
    ['pause', pause, ['x', '--bogus'], "Unknown option '--bogus'"],
    ['rollback', rollback, ['x', '--to', 'two'], '--to takes a revision number'],
    ['diff', diff, [], '-f <bundledeployment.yaml> is required'],
    ['reconcile', reconcile, [], 'reconcile takes exactly one BundleDeployment NAME'],
    ['reconcile', reconcile, ['x', '--wait', '--timeout', 'soon'], '--timeout "soon" is not a duration'],
    ['retry', retry, ['x', 'y'], 'retry takes exactly one BundleDeployment NAME'],
    ['tree', tree, ['x', '-o', 'wide'], 'unknown output format'],
    ['events', events, [], 'events takes exactly one BundleDeployment NAME'],
  ] as const)('%s %j', async (_verb, fn, args, message) => {
    const io = collect();
    expect(await fn([...args], io)).toBe(2);
    expect(io.stderr).toContain(message);
    expect(io.stderr).toContain('usage: hoist');
  });
  it('--help prints the help and exits 0', async () => {
    const io = collect();
    expect(await rollback(['--help'], io)).toBe(0);
    expect(io.stdout).toContain('usage: hoist rollback NAME --to REVISION');
    expect(io.stdout).toContain('exit codes:');
  });
});

describe('hoist as a process (main.ts dispatch)', () => {
  // tsx as a loader in one node process (its CLI would start a second one), all runs at once
  const hoist = (...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', ...args],
        { encoding: 'utf8', env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig' } },
        (err, stdout, stderr) => {
          const status = err ? (typeof err.code === 'number' ? err.code : null) : 0;
          if (err && status === null) reject(err);
          else resolve({ status, stdout, stderr });
        },
      );
    });
  const runs = () => ({
    usage: hoist('--help'),
    history: hoist('history', '--help'),
    completion: hoist('completion', 'bash'),
    unknown: hoist('frobnicate'),
    get: hoist('get'),
  });
  let all: ReturnType<typeof runs> | undefined;
  const started = () => (all ??= runs());
  it('lists the user verbs and exit codes in its usage, and dispatches each verb', async () => {
    const usage = await started().usage;
    expect(usage.status).toBe(0);
    for (const verb of [
      'get [NAME]',
      'pause NAME --reason',
      'resume NAME',
      'rollback NAME --to',
      'history NAME',
      'reconcile NAME [--wait]',
      'retry NAME',
      'tree NAME',
      'events NAME',
      'diff -f',
      'completion bash|zsh',
      'exit codes:',
    ])
      expect(usage.stderr).toContain(verb);
    expect((await started().history).stdout).toContain('usage: hoist history NAME');
    expect((await started().completion).stdout).toBe(bashCompletion());
  });
  it('exits 2 on an unknown verb and 1 when no cluster is reachable', async () => {
    expect((await started().unknown).status).toBe(2);
    const r = await started().get;
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^hoist get: /);
  });
});
