/**
 * A real local control plane: etcd + kube-apiserver (and optionally kube-controller-manager)
 * built from their Go modules, started on loopback with free ports, generated certificates, RBAC
 * and an admin kubeconfig. Used by the test suite (one per run) and by `hoist demo`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { classifyStatus } from '../util/http-status.ts';
import { generatePki, type Pki } from './certs.ts';
import { toolPath } from './tools.ts';

export interface ControlPlaneOptions {
  /** also run kube-controller-manager (Deployments get ReplicaSets, namespaces get deleted, ...) */
  controllerManager?: boolean;
  /**
   * make workloads become ready: kube-controller-manager, kube-scheduler and kwok with one fake
   * node, so Deployments, StatefulSets and DaemonSets roll out without a container runtime
   */
  workloads?: boolean;
  /** write an audit log of every request (for request-budget tests) */
  auditLog?: boolean;
  /** progress lines, e.g. console.error; silent by default */
  log?: (line: string) => void;
}

export interface ControlPlane {
  readonly dir: string;
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly auditLogPath: string | undefined;
  /** stop and start kube-apiserver again on the same port and data (etcd keeps running) */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function startProcess(bin: string, args: string[], logFile: string): ChildProcess {
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return child;
}

async function stopProcess(child: ChildProcess | undefined, graceMs = 5000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Polls an HTTPS health endpoint with the admin identity until it answers 200. */
async function waitHealthy(url: string, pki: Pki, child: ChildProcess, what: string, logFile: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`${what} exited with code ${child.exitCode}; last log lines:\n${tail(logFile)}`);
    }
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(url, { ...tls, timeout: 2000 }, (res) => {
        res.resume();
        resolve(classifyStatus(res.statusCode ?? 0) === 'ok');
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs / 1000}s; last log lines:\n${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function waitTcp(port: number, child: ChildProcess, what: string, logFile: string): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}:\n${tail(logFile)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}:\n${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function kubeconfigYaml(server: string, pki: Pki, user = 'hoist-admin'): string {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: hoist-dev',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(pki.caCert)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(pki.adminCert)}`,
    `    client-key-data: ${b64(pki.adminKey)}`,
    'contexts:',
    '- name: hoist-dev',
    '  context:',
    '    cluster: hoist-dev',
    `    user: ${user}`,
    'current-context: hoist-dev',
    '',
  ].join('\n');
}

const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';

/** one roomy fake node, managed by kwok: pods scheduled to it are reported running and ready */
const FAKE_NODE = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'kwok-node-0',
    annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
    labels: { 'kubernetes.io/hostname': 'kwok-node-0', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
  },
  spec: {},
  status: {
    allocatable: { cpu: '64', memory: '256Gi', pods: '250', 'ephemeral-storage': '1Ti' },
    capacity: { cpu: '64', memory: '256Gi', pods: '250', 'ephemeral-storage': '1Ti' },
  },
};

async function createFakeNode(server: string, pki: Pki): Promise<void> {
  const body = JSON.stringify(FAKE_NODE);
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  await new Promise<void>((resolve, reject) => {
    const req = request(`${server}/api/v1/nodes`, { ...tls, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      // created, or there already (a kept data dir): either way the node exists
      const answer = classifyStatus(res.statusCode ?? 0);
      res.on('end', () => (answer === 'ok' || answer === 'conflict' ? resolve() : reject(new Error(`creating fake node: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`;

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const etcdBin = toolPath('etcd');
  const apiBin = toolPath('kube-apiserver');
  const kcmBin = opts.controllerManager || opts.workloads ? toolPath('kube-controller-manager') : undefined;
  const schedBin = opts.workloads ? toolPath('kube-scheduler') : undefined;
  const kwokBin = opts.workloads ? toolPath('kwok') : undefined;

  const dir = await mkdtemp(join(tmpdir(), 'hoist-cp-'));
  const pkiDir = join(dir, 'pki');
  await mkdir(pkiDir);
  const pki = await generatePki(pkiDir);
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, kubeconfigYaml(server, pki), { mode: 0o600 });

  const etcdLog = join(dir, 'etcd.log');
  const etcd = startProcess(
    etcdBin,
    [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      // test data only: durability is not worth the fsync latency here
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    etcdLog,
  );
  await waitTcp(etcdPort, etcd, 'etcd', etcdLog);

  let auditLogPath: string | undefined;
  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, 'apiserver-certs')}`,
    `--tls-cert-file=${pki.servingCert}`,
    `--tls-private-key-file=${pki.servingKey}`,
    `--client-ca-file=${pki.caCert}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${pki.saPub}`,
    `--service-account-signing-key-file=${pki.saKey}`,
    '--service-cluster-ip-range=10.96.0.0/16', // 65k ClusterIPs: scale tests create a Service per bundle
    '--allow-privileged=true',
    // one client per test run: fairness queuing only adds latency here
    '--enable-priority-and-fairness=false',
    '--v=1',
  ];
  if (opts.auditLog) {
    auditLogPath = join(dir, 'audit.log');
    await writeFile(join(dir, 'audit-policy.yaml'), AUDIT_POLICY);
    apiArgs.push(`--audit-policy-file=${join(dir, 'audit-policy.yaml')}`, `--audit-log-path=${auditLogPath}`, '--audit-log-mode=blocking');
  }
  const apiLog = join(dir, 'kube-apiserver.log');
  let api = startProcess(apiBin, apiArgs, apiLog);
  await waitHealthy(`${server}/readyz`, pki, api, 'kube-apiserver', apiLog);
  log(`control plane ready at ${server} in ${((Date.now() - started) / 1000).toFixed(1)}s (data ${dir})`);

  let kcm: ChildProcess | undefined;
  if (kcmBin) {
    const kcmLog = join(dir, 'kube-controller-manager.log');
    const kcmPort = await freePort();
    kcm = startProcess(
      kcmBin,
      [
        `--kubeconfig=${kubeconfigPath}`,
        `--authentication-kubeconfig=${kubeconfigPath}`,
        `--authorization-kubeconfig=${kubeconfigPath}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        '--leader-elect=false',
        `--service-account-private-key-file=${pki.saKey}`,
        `--root-ca-file=${pki.caCert}`,
        `--cluster-signing-cert-file=${pki.caCert}`,
        `--cluster-signing-key-file=${pki.caKey}`,
        '--controllers=*',
        // the default 20 requests/s per controller made the deployment controller (about 4
        // requests per new Deployment) the bottleneck of every scale test: 100 Deployments took
        // 20 s to be observed whatever the client under test did (issue 10)
        '--kube-api-qps=300',
        '--kube-api-burst=600',
        '--v=1',
      ],
      kcmLog,
    );
    // its serving certificate is self-signed, so a listening port is the readiness signal
    await waitTcp(kcmPort, kcm, 'kube-controller-manager', kcmLog);
  }

  let sched: ChildProcess | undefined;
  let kwok: ChildProcess | undefined;
  if (schedBin && kwokBin) {
    const schedLog = join(dir, 'kube-scheduler.log');
    const schedPort = await freePort();
    sched = startProcess(
      schedBin,
      [
        `--kubeconfig=${kubeconfigPath}`,
        `--authentication-kubeconfig=${kubeconfigPath}`,
        `--authorization-kubeconfig=${kubeconfigPath}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${schedPort}`,
        '--leader-elect=false',
        '--v=1',
      ],
      schedLog,
    );
    await waitTcp(schedPort, sched, 'kube-scheduler', schedLog);
    const kwokLog = join(dir, 'kwok.log');
    kwok = startProcess(
      kwokBin,
      [
        `--kubeconfig=${kubeconfigPath}`,
        `--config=${kwokBin.replace(/kwok-(v[^/]+)$/, 'kwok-stages-$1.yaml')}`,
        // tests' own stages, after kwok's: a pod annotated hoist.test/exit-code fails with that code
        `--config=${fileURLToPath(new URL('./kwok-stages/pod-fail.yaml', import.meta.url))}`,
        '--manage-all-nodes=false',
        `--manage-nodes-with-annotation-selector=${KWOK_ANNOTATION}=fake`,
        '--cidr=10.244.0.0/16',
        '--node-ip=10.0.0.2',
        `--server-address=127.0.0.1:${await freePort()}`,
      ],
      kwokLog,
    );
    await createFakeNode(server, pki);
  }

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await stopProcess(kwok);
    await stopProcess(sched);
    await stopProcess(kcm);
    await stopProcess(api);
    await stopProcess(etcd);
    if (!process.env.HOIST_KEEP_CONTROL_PLANE) await rm(dir, { recursive: true, force: true });
  };
  const onExit = (): void => {
    for (const c of [kwok, sched, kcm, api, etcd]) if (c && c.exitCode === null) c.kill('SIGKILL');
  };
  process.once('exit', onExit);

  return {
    dir,
    kubeconfigPath,
    server,
    auditLogPath,
    async restartApiServer() {
      await stopProcess(api);
      api = startProcess(apiBin, apiArgs, apiLog);
      await waitHealthy(`${server}/readyz`, pki, api, 'kube-apiserver', apiLog);
    },
    stop,
  };
}
