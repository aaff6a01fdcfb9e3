/**
 * The controller image as users deploy it: `npm run image` builds it with podman (cached by a hash
 * of its inputs), and testcontainers starts it over podman's Docker-API socket the way the chart's
 * pod runs it — the chart's default image, the chart's ServiceAccount token mounted where the
 * kubelet mounts it (in-cluster configuration), uid 65532, read-only root file system with
 * writable /tmp and cache only, no capabilities. Host networking: the local API server and
 * registry listen on loopback. It installs a bundle from the local registry (TLS, its CA trusted
 * through NODE_EXTRA_CA_CERTS), serves /readyz and /metrics, and drains on SIGTERM with exit 0.
 * Git over ssh runs in it as it is (no shell): the image's OpenSSH client fetches from a real sshd.
 * Skips, saying why, where podman cannot be set up.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { toolPath, toolVersions } from '../../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { BD_TYPE, cond, describeStatus, isDone } from '../support/controller.ts';
import { deleteBundleDeployment } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { buildImage, podman, podmanEnv, podmanLogs, startPodmanService, useForTestcontainers, type PodmanEnv, type PodmanService } from '../support/podman.ts';
import { git } from '../support/git-server.ts';
import { freePort, startRegistry, type TestRegistry } from '../support/registry.ts';
import { generateSshKey, startSshServer } from '../support/ssh-server.ts';
import { waitUntil } from '../support/wait.ts';

const exec = promisify(execFile);
const CHART = new URL('../../charts/hoist/', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const ns = `hoist-image-${runId}`;
const label = `hoist.test/image`;
const engine = await podmanEnv();

/** the chart's securityContext on a container: testcontainers has no option for a read-only root file system */
class HardenedContainer extends GenericContainer {
  constructor(image: string) {
    super(image);
    this.hostConfig.ReadonlyRootfs = true;
  }
}

const apiServer = (): URL => {
  const kc = parse(readFileSync(kubeconfigPath(), 'utf8')) as { clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }> };
  return new URL(kc.clusters[0]!.cluster.server);
};

if ('unavailable' in engine) {
  // Skipped only where podman cannot be set up (not Linux, no apt-get, no root): the image cannot
  // be built or run there. The reason podman gave is in the test's name. On this project's
  // machines and in CI podman is installed by scripts/podman-env.sh, so this runs.
  describe('the controller image', () => {
    // CI always has podman (scripts/podman-env.sh installs it), so there its absence fails this test;
    // elsewhere it is skipped, because the image cannot be built without podman: the reason is in its name
    it.skipIf(!process.env.CI)(`podman is available (here: ${engine.unavailable})`, () => {
      throw new Error(`podman could not be set up, so the controller image was not built or run: ${engine.unavailable}`);
    });
  });
} else {
  const env: PodmanEnv = engine.env;
  let admin: RestKubeClient;
  let service: PodmanService;
  let registry: TestRegistry;
  let container: StartedTestContainer | undefined;
  let image: { ref: string; ms: number; log: string };
  let metricsPort: number;
  let logs = '';
  const dirs: string[] = [];
  const clusterObjects: KubeObject[] = [];

  /** the chart rendered with its defaults into the test namespace */
  async function chart(): Promise<KubeObject[]> {
    const { stdout } = await exec(toolPath('helm'), ['template', 'img', CHART, '--namespace', ns], { maxBuffer: 16 << 20 });
    return parseAllDocuments(stdout)
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => o !== null);
  }

  /** what the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount, with a TokenRequest token of the chart's ServiceAccount */
  async function serviceAccountDir(sa: string): Promise<string> {
    const { stdout: token } = await exec(toolPath('kubectl'), ['--kubeconfig', kubeconfigPath(), '-n', ns, 'create', 'token', sa, '--duration=1h']);
    const kc = parse(readFileSync(kubeconfigPath(), 'utf8')) as { clusters: Array<{ cluster: { 'certificate-authority-data': string } }> };
    const dir = await mkdtemp(join(tmpdir(), 'hoist-image-sa-'));
    dirs.push(dir);
    await chmod(dir, 0o755);
    await writeFile(join(dir, 'token'), token.trim(), { mode: 0o644 });
    await writeFile(join(dir, 'ca.crt'), Buffer.from(kc.clusters[0]!.cluster['certificate-authority-data'], 'base64'), { mode: 0o644 });
    await writeFile(join(dir, 'namespace'), ns, { mode: 0o644 });
    return dir;
  }

  async function pushBundle(): Promise<string> {
    const work = await mkdtemp(join(tmpdir(), 'hoist-image-layer-'));
    dirs.push(work);
    const layer = await writeLayer(
      [{ name: 'manifests/cm.yaml', data: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-image\ndata:\n  shipped: "yes"\n' }],
      join(work, 'layer.tgz'),
    );
    const client = new RegistryClient({ ca: registry.pki!.caCert });
    try {
      const pushed = await pushImage(client, parseReference(`${registry.host}/bundles/app:v1`), [layer], { stage: 'fetch' });
      return `${registry.host}/bundles/app@${pushed.digest}`;
    } finally {
      await client.close();
    }
  }

  beforeAll(async () => {
    image = await buildImage();
    service = await startPodmanService(env);
    useForTestcontainers(service);
    admin = createKubeClient(loadKubeConfig(kubeconfigPath()));
    await installCRD(admin, pino({ level: 'silent' }));
    const nsObj = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } };
    await admin.create(nsObj);
    clusterObjects.push(nsObj);
    registry = await startRegistry({ auth: 'none', tls: true });
  }, 900_000);

  afterAll(async () => {
    await container?.stop({ timeout: 5 }).catch(() => undefined);
    await admin?.delete(BD_TYPE, `image-${runId}`, undefined).catch(() => undefined);
    for (const o of clusterObjects.reverse()) await admin?.delete(o, o.metadata.name, o.metadata.namespace).catch(() => undefined);
    await registry?.stop();
    await service?.stop();
    await admin?.close();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  describe('the controller image', () => {
    it('is what the chart deploys by default: no shell, non-root, Node 24, helm, kustomize', async () => {
      console.error(`[image] ${image.ref} ready in ${image.ms} ms\n${image.log.trim()}`);
      const deployment = (await chart()).find((o) => o.kind === 'Deployment') as KubeObject & {
        spec: { template: { spec: { containers: Array<{ image: string }> } } };
      };
      // podman names a registry-less image localhost/…; a cluster's runtime resolves the same name locally
      expect(`localhost/${deployment.spec.template.spec.containers[0]!.image}`).toBe(image.ref);
      const inspect = JSON.parse(await podman(env, ['image', 'inspect', image.ref]))[0] as {
        Config: { User: string; Entrypoint: string[]; Env: string[] };
        Size: number;
      };
      expect(inspect.Config.User).toBe('65532:65532');
      expect(inspect.Config.Entrypoint[0]).toBe('/usr/local/bin/node');
      // the memory settings bench/scale.ts measured (README, Scale)
      expect(inspect.Config.Entrypoint).toEqual(expect.arrayContaining(['--max-semi-space-size=2', '--optimize-for-size']));
      expect(inspect.Config.Env).toContain('MALLOC_ARENA_MAX=2');
      // 242 MB today (README); a bound so that growth is noticed
      expect(inspect.Size).toBeLessThan(280e6);
      const files = await podman(env, [
        'run',
        '--rm',
        '--read-only',
        '--entrypoint',
        '/usr/local/bin/node',
        image.ref,
        '-e',
        `const fs=require('fs');console.log(process.version, fs.existsSync('/bin/sh'), fs.existsSync('/usr/local/bin/helm'), fs.existsSync('/usr/bin/git'))`,
      ]);
      expect(files).toMatch(/^v24\.\d+\.\d+ false true true$/);
      const helm = await podman(env, ['run', '--rm', '--read-only', '--entrypoint', '/usr/local/bin/helm', image.ref, 'version', '--short']);
      expect(helm).toMatch(/^v3\./);
      // the kustomize format's engine, where HOIST_KUSTOMIZE says
      expect(inspect.Config.Env).toContain('HOIST_KUSTOMIZE=/usr/local/bin/kustomize');
      const kustomize = await podman(env, ['run', '--rm', '--read-only', '--entrypoint', '/usr/local/bin/kustomize', image.ref, 'version']);
      expect(kustomize.trim()).toBe(toolVersions().KUSTOMIZE_VERSION);
    });

    it('fetches a git repository over ssh with what the image holds: no shell, a key with a passphrase', async () => {
      // the git source's ssh client is a configuration file run through its `#!/usr/bin/ssh -F`
      // line, the passphrase answered by a node script: both must work where there is no /bin/sh
      const work = await mkdtemp(join(tmpdir(), 'hoist-image-ssh-'));
      dirs.push(work);
      const bare = join(work, 'repos', 'deploy.git');
      git('/', ['init', '-q', '--bare', '-b', 'main', bare]);
      const clone = join(work, 'clone');
      git('/', ['init', '-q', '-b', 'main', clone]);
      await writeFile(join(clone, 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: over-ssh\n');
      git(clone, ['add', '.']);
      git(clone, ['commit', '-qm', 'one']);
      git(clone, ['push', '-q', bare, 'main']);
      const commit = git(clone, ['rev-parse', 'HEAD']);
      const passphrase = 'image-ssh-passphrase';
      const key = await generateSshKey(work, 'deploy', passphrase);
      const sshd = await startSshServer({ root: join(work, 'repos'), authorizedKeys: [key.publicKey] });
      try {
        const input = {
          spec: { kind: 'git', git: { repository: sshd.url('deploy.git'), ref: { branch: 'main' } } },
          ctx: {
            credentials: {
              data: { 'ssh-privatekey': key.privateKey, passphrase, known_hosts: sshd.knownHosts },
              secret: 'ns/k',
              hosts: [`127.0.0.1:${sshd.port}`],
            },
          },
        };
        const script = [
          "import { readdirSync } from 'node:fs';",
          "import { FsContentStore } from '/app/dist/src/cache/fs-content-store.js';",
          "import { GitSource } from '/app/dist/src/sources/git/git-source.js';",
          'const { spec, ctx } = JSON.parse(process.env.HOIST_TEST_INPUT);',
          'const source = new GitSource();',
          'const resolved = await source.resolve(spec, ctx);',
          "const dir = await source.fetch(spec, resolved, new FsContentStore({ root: '/tmp/store' }), ctx);",
          'console.log(JSON.stringify({ commit: resolved.status.commit, files: readdirSync(dir) }));',
        ].join('\n');
        const out = await podman(env, [
          'run',
          '--rm',
          '--read-only',
          // as the chart's emptyDir: writable by the user, files in it may be run (podman's tmpfs is noexec unless told)
          '--tmpfs',
          '/tmp:rw,exec,U',
          '--network',
          'host',
          '--user',
          '65532:65532',
          '--env',
          `HOIST_TEST_INPUT=${JSON.stringify(input)}`,
          '--entrypoint',
          '/usr/local/bin/node',
          image.ref,
          '--input-type=module',
          '-e',
          script,
        ]);
        expect(JSON.parse(out.split('\n').at(-1)!)).toEqual({ commit, files: ['cm.yaml'] });
        // the ref advertisement and the fetch, both through the image's ssh
        expect(await sshd.commands()).toEqual(["git-upload-pack '/deploy.git'", "git-upload-pack '/deploy.git'"]);
      } finally {
        await sshd.close();
      }
    });

    it(
      'runs as the chart ServiceAccount with a read-only root: installs a bundle from the registry, serves /readyz and /metrics',
      { timeout: 180_000 },
      async () => {
        const objs = await chart();
        // the chart's RBAC and ServiceAccount; the Deployment is what this container stands for
        for (const o of objs.filter((x) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(x.kind))) {
          await admin.apply(o, { fieldManager: 'hoist-image-test' });
          if (!o.metadata.namespace) clusterObjects.push(o);
        }
        const sa = objs.find((o) => o.kind === 'ServiceAccount')!.metadata.name;
        const saDir = await serviceAccountDir(sa);
        const caDir = await mkdtemp(join(tmpdir(), 'hoist-image-ca-'));
        dirs.push(caDir);
        await chmod(caDir, 0o755);
        await writeFile(join(caDir, 'registry-ca.crt'), registry.pki!.caCert, { mode: 0o644 });
        const ref = await pushBundle();
        metricsPort = await freePort();
        const server = apiServer();

        container = await new HardenedContainer(image.ref)
          .withNetworkMode('host')
          .withUser('65532:65532')
          .withDroppedCapabilities('ALL')
          .withSecurityOpt('no-new-privileges')
          // U: owned by the container's user, as the chart's fsGroup makes its emptyDirs writable
          .withTmpFs({ '/tmp': 'rw,size=256m,U', '/var/cache/hoist': 'rw,size=256m,U' })
          .withBindMounts([
            { source: saDir, target: '/var/run/secrets/kubernetes.io/serviceaccount', mode: 'ro' },
            { source: caDir, target: '/etc/hoist-test', mode: 'ro' },
          ])
          .withEnvironment({
            KUBERNETES_SERVICE_HOST: server.hostname,
            KUBERNETES_SERVICE_PORT: server.port,
            HOIST_NAMESPACE: ns,
            HOIST_LOG_LEVEL: 'info',
            NODE_EXTRA_CA_CERTS: '/etc/hoist-test/registry-ca.crt',
          })
          .withCommand([
            'run',
            `--namespace=${ns}`,
            '--leader-elect',
            `--metrics-bind-address=127.0.0.1:${metricsPort}`,
            '--workers=2',
            `--selector=${label}=${runId}`,
          ])
          .withLogConsumer((stream) => stream.on('data', (d: Buffer | string) => (logs += d.toString())))
          .withWaitStrategy(Wait.forLogMessage(/serving \/healthz/))
          .withStartupTimeout(60_000)
          .start();

        await waitUntil(
          '/readyz answers 200',
          async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.status === 200,
          60_000,
        );
        await admin.create({
          ...BD_TYPE,
          metadata: { name: `image-${runId}`, labels: { [label]: runId } },
          spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'image', image: { ref } }] },
        } as unknown as KubeObject);
        let bd: BundleDeployment | undefined;
        await waitUntil(
          'the container installs the bundle',
          async () => {
            bd = (await admin.get(BD_TYPE, `image-${runId}`)) as unknown as BundleDeployment | undefined;
            return !!bd && isDone(bd);
          },
          90_000,
        ).catch((e: Error) => {
          throw new Error(`${e.message}\n${describeStatus(bd)}\ncontainer logs:\n${logs.slice(-4000)}`);
        });
        expect(cond(bd, 'Installed')).toMatchObject({ status: 'True' });
        const cm = (await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-image', ns)) as { data?: Record<string, string> } | undefined;
        expect(cm?.data).toEqual({ shipped: 'yes' });
        const lease = await admin.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'hoist-controller', ns);
        expect((lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity).toBeTruthy();

        const ready = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
        expect(ready.status).toBe(200);
        const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        expect(metrics).toMatch(/controller_runtime_reconcile_total\{controller="bundledeployment",result="success"\} [1-9]/);
        expect(metrics).toContain('nodejs_heap_size_used_bytes');
      },
    );

    it('drains on SIGTERM: exit code 0, the Lease released, "shut down" clean', { timeout: 120_000 }, async () => {
      expect(container, 'the previous test started the container').toBeDefined();
      // the finalizer is removed by the running controller; then stop it
      await deleteBundleDeployment(admin, `image-${runId}`);
      // timeout in ms: the grace period before SIGKILL, as terminationGracePeriodSeconds
      const stopped = await container!.stop({ timeout: 45_000, remove: false });
      container = undefined;
      const state = JSON.parse(await podman(env, ['inspect', '--format', '{{json .State}}', stopped.getId()])) as { ExitCode: number; OOMKilled: boolean };
      // the log consumer's stream can still be delivering the last lines when stop() returns; the
      // stored log of the exited container is complete
      const logs = await podmanLogs(env, stopped.getId());
      await podman(env, ['rm', stopped.getId()]);
      expect(state.ExitCode, logs.slice(-3000)).toBe(0);
      expect(logs).toContain('"msg":"shutting down"');
      expect(logs).toMatch(/"clean":true[^\n]*"msg":"shut down"/);
      expect(logs).toContain('"msg":"released the lease"');
      const lease = await admin.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'hoist-controller', ns);
      expect((lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '').toBe('');
    });
  });
}
