/**
 * The `hoist` user verbs (issue 14) against the real control plane and a real controller: get,
 * pause/resume (annotations, Events, a hand edit kept while paused and reverted on resume),
 * history, rollback by spec from the revision store (no download), and `hoist diff` on the
 * argo-rollouts upgrade compared with what the controller then does; `hoist diff` and the
 * controller agree on a driftIgnore'd field, on fields a real `kubectl patch --field-manager
 * kubectl-edit` set, and on an object the BundleDeployment's ServiceAccount may not write.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { API_VERSION, KIND, LABEL_OWNER_NAME, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { diff } from '../../src/cli/verbs/diff.ts';
import { clean } from '../../src/cli/verbs/diff-plan.ts';
import { get } from '../../src/cli/verbs/get.ts';
import { history } from '../../src/cli/verbs/history.ts';
import { ANNOTATION_PAUSED_AT, ANNOTATION_PAUSED_BY, ANNOTATION_PAUSED_REASON, pause, resume } from '../../src/cli/verbs/pause.ts';
import { rollback } from '../../src/cli/verbs/rollback.ts';
import { describeObject, type KubeObject } from '../../src/kube/types.ts';
import { cond, isDone, TEST_LABEL } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { CM, configMap, kubectl, serveBundle } from '../support/e2e-bundles.ts';
import { cm, OWNED_KINDS, plainRolloutsTarballs } from '../support/upgrade-fixtures.ts';
import { sleep } from '../support/wait.ts';
import { runVerb, type Verb } from '../support/cli-verb.ts';

let tmp: string;

const { t, files } = controllerWithFiles();
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'hoist-cli-test-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** runs a verb in-process with the test's kubeconfig (and the controller's namespace) */
const hoist = (verb: Verb, args: string[], opts: { namespaced?: boolean } = {}) => runVerb(verb, args, opts.namespaced ? t.namespace : undefined);

async function eventsOf(name: string): Promise<Array<{ reason: string; message: string }>> {
  const list = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return list.items as unknown as Array<{ reason: string; message: string }>;
}

describe('get, pause, resume, history, rollback', () => {
  it('work on a BundleDeployment through two revisions and back', async () => {
    const bd = `cli-${t.runId}`;
    const ns = `cli-${t.runId}`;
    const v1 = await tarGz({ 'cm.yaml': cm('app', { version: '1' }) });
    const v2 = await tarGz({ 'cm.yaml': cm('app', { version: '2' }) });
    files.set('/cli-v1.tgz', v1);
    files.set('/cli-v2.tgz', v2);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/cli-v1.tgz'), sha256: sha256(v1) } }] });
    await t.waitFor(bd, isDone, 'v1 installed');
    // v2 floats: an http URL without sha256, resolved by downloading it
    await t.patchSpec(bd, { sources: [{ kind: 'http', http: { url: files.url('/cli-v2.tgz') } }] });
    await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v2 installed');

    // get: the table with the done signal, and -o json
    const table = await hoist(get, [bd]);
    expect(table.code).toBe(0);
    const [header, row] = table.stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s{3,}/));
    expect(header).toEqual(['NAME', 'FORMAT', 'REVISION', 'INSTALLED', 'HEALTHY', 'PROGRESSING', 'PAUSED', 'DONE', 'AGE']);
    expect(row!.slice(0, 8)).toEqual([bd, 'plain', '2', 'Installed', 'True', 'Succeeded', 'false', 'true']);
    const json = await hoist(get, [bd, '-o', 'json']);
    expect((JSON.parse(json.stdout) as BundleDeployment).status?.activeRevision?.number).toBe(2);
    expect((await hoist(get, ['-l', `${TEST_LABEL}=${t.runId}`, '-o', 'name'])).stdout.split('\n')).toContain(bd);
    const missing = await hoist(get, [`no-such-${t.runId}`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`bundledeployment "no-such-${t.runId}" not found`);

    // history: both revisions, their phases and pinned sources (v2's URL pinned to what it resolved to)
    const hist = await hoist(history, [bd, '-o', 'json'], { namespaced: true });
    expect(hist.code).toBe(0);
    const entries = JSON.parse(hist.stdout) as Array<{
      revision: number;
      phase: string;
      sources: BundleDeploymentSpec['sources'];
      storedAt: string;
      rollback: boolean;
    }>;
    expect(entries.map((e) => [e.revision, e.phase, e.rollback])).toEqual([
      [1, 'Superseded', true],
      [2, 'Active', true],
    ]);
    expect(entries[1]!.sources).toEqual([{ kind: 'http', http: { url: files.url('/cli-v2.tgz'), sha256: sha256(v2) }, destination: '' }]);
    expect(Date.parse(entries[0]!.storedAt)).toBeGreaterThan(0);
    const histTable = await hoist(history, [bd], { namespaced: true });
    expect(histTable.stdout).toMatch(/^REVISION\s+PHASE\s+DIGEST\s+STORED\s+SOURCES\n1\s+Superseded\s+[0-9a-f]{12}\s+\d+[smhdy]\s+http /);

    // rollback to a revision that is not stored: refused, nothing changed
    const before = await t.get(bd);
    const refused = await hoist(rollback, [bd, '--to', '9'], { namespaced: true });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`revision 9 of ${bd} is not stored in namespace ${t.namespace} (stored: 1, 2); nothing changed`);
    expect((await t.get(bd))?.metadata.generation).toBe(before?.metadata.generation);

    // rollback to 1: the stored revision's spec, no download, revision number kept
    const requests = files.requests;
    const back = await hoist(rollback, [bd, '--to', '1'], { namespaced: true });
    expect(back.code, back.stderr).toBe(0);
    const rolled = await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 1, 'rolled back to revision 1');
    expect(rolled.spec.sources).toEqual([{ kind: 'http', http: { url: files.url('/cli-v1.tgz'), sha256: sha256(v1) }, destination: '' }]);
    expect(files.requests).toBe(requests);
    expect(((await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app', ns)) as unknown as { data: Record<string, string> }).data).toEqual({
      version: '1',
    });
    expect((await hoist(rollback, [bd, '--to', '1'], { namespaced: true })).stdout).toContain("already names revision 1's content");

    // pause: spec.paused, the reason/who/when annotations and an Event; a hand edit stays while paused
    const paused = await hoist(pause, [bd, '--reason', 'hotfix INC-42']);
    expect(paused.code, paused.stderr).toBe(0);
    const p = await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    expect(p.spec.paused).toBe(true);
    expect(p.metadata.annotations?.[ANNOTATION_PAUSED_REASON]).toBe('hotfix INC-42');
    expect(p.metadata.annotations?.[ANNOTATION_PAUSED_BY]).toBeTruthy();
    expect(Date.parse(p.metadata.annotations?.[ANNOTATION_PAUSED_AT] ?? '')).toBeGreaterThan(0);
    expect((await eventsOf(bd)).find((e) => e.reason === 'Paused')?.message).toMatch(/^paused by .+: hotfix INC-42$/);
    await t.client.patch({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app', ns, { data: { version: 'hotfix' } }, 'merge', { fieldManager: 'kubectl-patch' });
    expect(
      (await hoist(get, [bd])).stdout
        .split('\n')[1]!
        .trim()
        .split(/\s{3,}/)
        .slice(5, 8),
    ).toEqual(['Paused', 'true', 'true']);

    // resume: annotations cleared, an Event, and the controller reverts the hand edit
    const resumed = await hoist(resume, [bd]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const r = await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'False' && isDone(b), 'resumed');
    expect(r.spec.paused).toBe(false);
    expect(Object.keys(r.metadata.annotations ?? {}).filter((k) => k.startsWith('core.rukpak.io/paused'))).toEqual([]);
    expect((await eventsOf(bd)).find((e) => e.reason === 'Resumed')?.message).toMatch(/^resumed by .+ \(was paused: hotfix INC-42\)$/);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const live = (await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app', ns)) as unknown as { data: Record<string, string> };
      if (live.data.version === '1') break;
      if (Date.now() > deadline) throw new Error(`hand edit not reverted after resume: ${JSON.stringify(live.data)}`);
      await sleep(100);
    }
  });
});

/** "group/version/Kind/ns/name" as diff labels objects */
const label = (o: KubeObject): string => describeObject(o).replaceAll(' ', '/');

/** the cleaned live objects the BD owns, by label */
async function owned(bd: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const type of OWNED_KINDS) {
    for (const o of (await t.client.list(type, { labelSelector: `${LABEL_OWNER_NAME}=${bd}` })).items)
      out.set(label({ ...o, apiVersion: type.apiVersion, kind: type.kind }), clean(o));
  }
  return out;
}

/** per object of a `hoist diff` output: created (only + lines), pruned (only - lines) or changed */
function parseDiff(stdout: string): Map<string, 'created' | 'pruned' | 'changed'> {
  const out = new Map<string, 'created' | 'pruned' | 'changed'>();
  for (const block of stdout.split(/^--- live\//m).slice(1)) {
    const subject = block.slice(0, block.indexOf('\n'));
    const hunk = block.match(/^@@ -(\d+),?(\d*) \+(\d+),?(\d*) @@/m);
    expect(hunk, `a hunk for ${subject}`).toBeTruthy();
    out.set(subject, hunk![1] === '0' && hunk![2] === '0' ? 'created' : hunk![3] === '0' && hunk![4] === '0' ? 'pruned' : 'changed');
  }
  return out;
}

describe('hoist diff', () => {
  it('on the argo-rollouts upgrade lists exactly the objects the controller then changes and the one it prunes', async () => {
    const id = `d${t.runId}`;
    const ns = `rollouts-diff-${t.runId}`;
    const { v1, v2 } = await plainRolloutsTarballs(id);
    files.set('/diff-v1.tgz', v1);
    files.set('/diff-v2.tgz', v2);
    const bd = `rollouts-diff-${t.runId}`;
    const spec = (body: Buffer, path: string): BundleDeploymentSpec => ({
      installNamespace: ns,
      format: 'plain',
      upgrade: { crdSafety: 'None' },
      sources: [{ kind: 'http', http: { url: files.url(path), sha256: sha256(body) } }],
    });
    await t.create(bd, spec(v1, '/diff-v1.tgz'));
    await t.waitFor(bd, isDone, 'v1.8.4 installed', 90_000);

    const file = join(tmp, 'rollouts-v2.yaml');
    await writeFile(
      file,
      stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name: bd, labels: { [TEST_LABEL]: t.runId } }, spec: spec(v2, '/diff-v2.tgz') }),
    );
    const before = await owned(bd);
    const d = await hoist(diff, ['-f', file], { namespaced: true });
    expect(d.code, d.stderr).toBe(1);
    const predicted = parseDiff(d.stdout);
    expect([...predicted].filter(([, a]) => a === 'pruned').map(([s]) => s)).toEqual([`v1/ConfigMap/${ns}/argo-rollouts-legacy`]);
    expect(d.stderr).toMatch(/\d+ configured/);
    // the phases the new revision is applied in, before the summary
    expect(d.stderr).toMatch(/apply phases .*\n {2}1\. identity: \d+ objects?\n(.*\n)* {2}\d+\. deploy: \d+ objects?\n/);
    // a dry-run writes nothing
    expect(await owned(bd)).toEqual(before);

    await t.patchSpec(bd, { sources: spec(v2, '/diff-v2.tgz').sources });
    await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v1.9.1 installed', 90_000);
    const after = await owned(bd);
    const actual = new Map<string, 'created' | 'pruned' | 'changed'>();
    for (const [k, v] of before)
      if (!after.has(k)) actual.set(k, 'pruned');
      else if (after.get(k) !== v) actual.set(k, 'changed');
    for (const k of after.keys()) if (!before.has(k)) actual.set(k, 'created');
    expect(actual.size).toBeGreaterThan(1);
    expect(new Map([...predicted].sort())).toEqual(new Map([...actual].sort()));

    // the same file again: nothing to do
    const again = await hoist(diff, ['-f', file], { namespaced: true });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('');
    // two installs of up to 90 s each: the test's own bound must cover them
  }, 300_000);

  it('reports an object collision protection refuses (exit 1), and under IfNotOwned would adopt', async () => {
    const ns = `cli-refuse-${t.runId}`;
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await t.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'by-hand', namespace: ns }, data: { a: '1' } });
    const body = await tarGz({ 'cm.yaml': cm('by-hand', { a: '2' }) });
    files.set('/refuse.tgz', body);
    const file = join(tmp, 'refuse.yaml');
    await writeFile(
      file,
      stringify({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: `refuse-${t.runId}` },
        spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/refuse.tgz'), sha256: sha256(body) } }] },
      }),
    );
    const d = await hoist(diff, ['-f', file], { namespaced: true });
    expect(d.code, d.stderr).toBe(1);
    expect(d.stderr).toContain(
      `v1 ConfigMap ${ns}/by-hand: refused: owned by none (created outside Hoist): collisionProtection Prevent takes over only objects of the same lineage`,
    );
    expect(d.stdout).toBe('');

    // under IfNotOwned the same object would be adopted: its diff shows the data and Hoist's labels
    await writeFile(
      file,
      stringify({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: `refuse-${t.runId}` },
        spec: {
          installNamespace: ns,
          format: 'plain',
          collisionProtection: 'IfNotOwned',
          sources: [{ kind: 'http', http: { url: files.url('/refuse.tgz'), sha256: sha256(body) } }],
        },
      }),
    );
    const adopt = await hoist(diff, ['-f', file], { namespaced: true });
    expect(adopt.code, adopt.stderr).toBe(1);
    expect(adopt.stderr).toContain(`v1 ConfigMap ${ns}/by-hand: would be taken over (adopt)`);
    expect(adopt.stdout).toContain(`--- live/v1/ConfigMap/${ns}/by-hand`);
    expect(adopt.stdout).toMatch(/^-  a: "1"$/m);
    expect(adopt.stdout).toMatch(/^\+  a: "2"$/m);
    expect(adopt.stdout).toContain(`+    core.rukpak.io/owner-name: refuse-${t.runId}`);
    // a dry-run: the object is still as it was
    expect(((await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'by-hand', ns)) as unknown as { data: Record<string, string> }).data).toEqual({
      a: '1',
    });
  });
});

/** the "hoist/…" side of one object's block in a `hoist diff` output: `before` with the block's hunks applied */
function predictedAfter(stdout: string, subject: string, before: string): string {
  const block = stdout.split(/^(?=--- live\/)/m).find((b) => b.startsWith(`--- live/${subject}\n`));
  expect(block, `a diff of ${subject}`).toBeDefined();
  const lines = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let i = 0;
  for (const hunk of block!.split(/^(?=@@ )/m).slice(1)) {
    const from = Math.max(0, Number(hunk.match(/^@@ -(\d+)/)![1]) - 1);
    out.push(...lines.slice(i, from));
    i = from;
    for (const l of hunk.split('\n').slice(1)) {
      if (l.startsWith(' ')) out.push(lines[i++]!);
      else if (l.startsWith('-')) i++;
      else if (l.startsWith('+')) out.push(l.slice(1));
    }
  }
  out.push(...lines.slice(i));
  return out.length ? `${out.join('\n')}\n` : '';
}

describe('hoist diff agrees with the controller', () => {
  const liveText = async (name: string, ns: string): Promise<string> => clean(await t.client.get(CM, name, ns));
  const bdFile = async (name: string, spec: BundleDeploymentSpec): Promise<string> => {
    const file = join(tmp, `${name}.yaml`);
    await writeFile(file, stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name, labels: { [TEST_LABEL]: t.runId } }, spec }));
    return file;
  };

  it("on driftIgnore'd fields: left as they are, whoever holds them, when the rule is added with new content", async () => {
    const bd = `agree-ignore-${t.runId}`;
    const ns = bd;
    const v1 = await serveBundle(files, '/agree-ignore-v1.tgz', [configMap('settings', { mode: 'a', size: '1', seed: 's1' })]);
    const v2 = await serveBundle(files, '/agree-ignore-v2.tgz', [configMap('settings', { mode: 'b', size: '2', seed: 's2' })]);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [v1] });
    await t.waitFor(bd, isDone, 'v1 installed');
    await t.patchSpec(bd, { paused: true });
    await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    // another controller takes data.size (forced SSA); data.seed stays Hoist's
    await t.client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns }, data: { size: '5' } } as KubeObject, {
      fieldManager: 'autoscaler',
      force: true,
    });

    const spec: BundleDeploymentSpec = {
      installNamespace: ns,
      format: 'plain',
      sources: [v2],
      driftIgnore: [{ target: { kind: 'ConfigMap', name: 'settings' }, jsonPointers: ['/data/size', '/data/seed'] }],
    };
    const before = await liveText('settings', ns);
    const d = await hoist(diff, ['-f', await bdFile(bd, spec)], { namespaced: true });
    expect(d.code, d.stderr).toBe(1);
    const predicted = predictedAfter(d.stdout, `v1/ConfigMap/${ns}/settings`, before);
    expect(predicted).toMatch(/mode: b/);

    await t.patchSpec(bd, { ...spec, paused: false });
    await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v2 installed');
    const after = await liveText('settings', ns);
    expect(after).toMatch(/size: "5"\n/);
    expect(after).toMatch(/seed: s1\n/);
    expect(predicted).toBe(after);
  });

  it('on fields a hand edit (kubectl patch as kubectl-edit) set: changed back, and the ones it added removed', async () => {
    const bd = `agree-edit-${t.runId}`;
    const ns = bd;
    const spec: BundleDeploymentSpec = {
      installNamespace: ns,
      format: 'plain',
      sources: [await serveBundle(files, '/agree-edit.tgz', [configMap('app', { a: '1', b: '2' })])],
    };
    await t.create(bd, spec);
    await t.waitFor(bd, isDone, 'installed');
    await t.patchSpec(bd, { paused: true });
    await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    await kubectl([
      'patch',
      'configmap',
      'app',
      '-n',
      ns,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ data: { a: 'hand', extra: 'x' } }),
      '--field-manager',
      'kubectl-edit',
    ]);

    const before = await liveText('app', ns);
    const d = await hoist(diff, ['-f', await bdFile(bd, spec)], { namespaced: true });
    expect(d.code, d.stderr).toBe(1);
    expect(d.stderr).toContain(`v1 ConfigMap ${ns}/app: configured: hand edits reverted (kubectl-edit: data.a, kubectl-edit: data.extra)`);
    const predicted = predictedAfter(d.stdout, `v1/ConfigMap/${ns}/app`, before);

    await t.patchSpec(bd, { paused: false });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Paused')?.status === 'False', 'resumed and corrected');
    const after = await liveText('app', ns);
    expect(after).not.toMatch(/extra|hand/);
    expect(predicted).toBe(after);
  });

  it("on an object the BundleDeployment's ServiceAccount may not write: the diff reports the refusal the controller meets", async () => {
    const bd = `agree-sa-${t.runId}`;
    const ns = bd;
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'installer', namespace: ns } });
    // ConfigMaps: anything; Secrets: read only
    const rules = [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
    ];
    await t.client.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'installer', namespace: ns }, rules } as KubeObject);
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'installer', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'installer' },
      subjects: [{ kind: 'ServiceAccount', name: 'installer', namespace: ns }],
    } as KubeObject);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token' }, stringData: { token: 'not-a-secret' } } as KubeObject;
    const spec: BundleDeploymentSpec = {
      installNamespace: ns,
      serviceAccount: { name: 'installer' },
      format: 'plain',
      sources: [await serveBundle(files, '/agree-sa.tgz', [configMap('cfg', { a: '1' }), secret])],
    };

    const d = await hoist(diff, ['-f', await bdFile(bd, spec)], { namespaced: true });
    expect(d.code, d.stderr).toBe(1);
    expect(d.stderr).toContain(`applied as system:serviceaccount:${ns}:installer`);
    const refusal = d.stderr.match(/^the controller's apply would fail: (.*)$/m)?.[1];
    expect(refusal, d.stderr).toContain(
      `v1 Secret ${ns}/token: apply refused: secrets "token" is forbidden: User "system:serviceaccount:${ns}:installer" cannot patch resource "secrets"`,
    );
    expect(refusal).not.toContain('ConfigMap');
    // the API server's own words, as the controller will meet them
    const answer = refusal!.slice(refusal!.indexOf('secrets "token" is forbidden'));

    await t.create(bd, spec);
    const failed = await t.waitFor(bd, (b) => cond(b, 'Installed')?.message.includes('forbidden') ?? false, 'the Secret refused');
    expect(cond(failed, 'Installed')!.message).toContain(`v1 Secret ${ns}/token: `);
    expect(cond(failed, 'Installed')!.message).toContain(answer);
    expect(cond(failed, 'Installed')!.message).not.toContain(`ConfigMap ${ns}/cfg`);
  });
});
