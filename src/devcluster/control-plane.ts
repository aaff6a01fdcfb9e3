/**
 * A real local control plane: etcd + kube-apiserver (and optionally kube-controller-manager)
 * built from their Go modules, started on loopback with free ports, generated certificates, RBAC
 * and an admin kubeconfig. Used by the test suite (one per run) and by `hoist demo`.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { classifyStatus } from '../util/http-status.ts';
import { adminRequest } from './admin-api.ts';
import { generatePki, type Pki } from './certs.ts';
import { freePort, startProcess, stopProcess, tail, waitTcp } from './processes.ts';
import { claimNodeNetwork, realNodeUnavailable, startRealNode, type ClaimedNetwork, type RealNode } from './real-node.ts';
import { toolPath } from './tools.ts';
import { sleep } from '../util/sleep.ts';

export interface ControlPlaneOptions {
  /** also run kube-controller-manager (Deployments get ReplicaSets, namespaces get deleted, ...) */
  controllerManager?: boolean;
  /**
   * make workloads become ready: kube-controller-manager, kube-scheduler and kwok with one fake
   * node, so Deployments, StatefulSets and DaemonSets roll out without a container runtime
   */
  workloads?: boolean;
  /**
   * also run a real node (containerd, the kubelet, kube-proxy, a CNI bridge; src/devcluster/real-node.ts)
   * beside kwok's, tainted so only pods that ask for it land there; implies workloads. kube-apiserver
   * then listens on the bridge's gateway address (pods reach it; so does this machine), not on
   * 127.0.0.1. 'optional': where the node cannot run, the control plane starts without it and
   * `realNodeUnavailable` says why; true: that is an error.
   */
  realNode?: boolean | 'optional';
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
  /** the real node, when one was asked for and started */
  readonly realNode: RealNode | undefined;
  /** why there is no real node although one was asked for ('optional'), in one line */
  readonly realNodeUnavailable: string | undefined;
  /** stop and start kube-apiserver again on the same port and data (etcd keeps running) */
  restartApiServer(): Promise<void>;
  /** stop kube-apiserver only (etcd keeps running), e.g. to make the cluster unreachable */
  stopApiServer(): Promise<void>;
  /** start a stopped kube-apiserver again on the same port and data; resolves once it is ready */
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
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
    await sleep(250);
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
  const r = await adminRequest(server, pki, 'POST', '/api/v1/nodes', FAKE_NODE);
  // created, or there already (a kept data dir): either way the node exists
  if (r.answer !== 'ok' && r.answer !== 'conflict') throw new Error(`creating fake node: ${r.status} ${r.text}`);
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
  const workloads = opts.workloads || Boolean(opts.realNode);
  const kcmBin = opts.controllerManager || workloads ? toolPath('kube-controller-manager') : undefined;
  const schedBin = workloads ? toolPath('kube-scheduler') : undefined;
  const kwokBin = workloads ? toolPath('kwok') : undefined;

  const dir = await mkdtemp(join(tmpdir(), 'hoist-cp-'));
  let stopped = false;
  let realNodeUnavailable_: string | undefined;
  let claimed: ClaimedNetwork | undefined;
  if (opts.realNode) {
    const why = realNodeUnavailable();
    if (why && opts.realNode !== 'optional') throw new Error(why);
    if (why) realNodeUnavailable_ = why;
    else {
      try {
        claimed = await claimNodeNetwork(dir, undefined, log);
      } catch (e) {
        if (opts.realNode !== 'optional') throw e;
        realNodeUnavailable_ = (e as Error).message;
      }
    }
  }
  // with a real node, kube-apiserver listens on the bridge's gateway: its pods (and the
  // `kubernetes` Service's endpoint) reach it there, and so does this machine
  const apiHost = claimed?.network.gateway ?? '127.0.0.1';
  const pkiDir = join(dir, 'pki');
  await mkdir(pkiDir);
  const pki = await generatePki(pkiDir, claimed ? [claimed.network.gateway] : []);
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://${apiHost}:${apiPort}`;
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
      // a ceiling, not an allocation: bench/scale.ts's 10,000 BundleDeployments (and kubectl's
      // reference copy) hold ~100k objects plus their history until the API server compacts;
      // etcd's default 2 GiB would turn that into NOSPACE alarms
      '--quota-backend-bytes=8589934592',
      '--log-level=warn',
    ],
    etcdLog,
  );
  await waitTcp(etcdPort, etcd, 'etcd', etcdLog);

  let auditLogPath: string | undefined;
  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    `--bind-address=${apiHost}`,
    `--advertise-address=${apiHost}`,
    `--secure-port=${apiPort}`,
    // the kubelet's API (logs, exec) with the admin identity, which the kubelet's webhook authorizer allows
    `--kubelet-client-certificate=${pki.adminCert}`,
    `--kubelet-client-key=${pki.adminKey}`,
    // the node's InternalIP (the bridge gateway): its name resolves nowhere, and no lookup may leave the machine
    '--kubelet-preferred-address-types=InternalIP',
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
    // one file for the whole run: readers take byte offsets in it, and the default rotates at
    // 100 MB (lumberjack's default for 0), which a 10,000-BundleDeployment wave passes twice
    apiArgs.push(
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${auditLogPath}`,
      '--audit-log-mode=blocking',
      '--audit-log-maxsize=1000000',
    );
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

  let realNode: RealNode | undefined;
  if (claimed) {
    try {
      realNode = await startRealNode({ dir, server, kubeconfigPath, pki, network: claimed.network, log });
    } catch (e) {
      if (opts.realNode !== 'optional') {
        await stopAll();
        throw e;
      }
      realNodeUnavailable_ = `the real node did not start: ${(e as Error).message.split('\n')[0]}`;
      log(`${realNodeUnavailable_} (logs in ${dir})`);
    }
  }

  async function stopAll(): Promise<void> {
    if (stopped) return;
    stopped = true;
    await realNode?.stop();
    await stopProcess(kwok);
    await stopProcess(sched);
    await stopProcess(kcm);
    await stopProcess(api);
    await stopProcess(etcd);
    await claimed?.release();
    if (!process.env.HOIST_KEEP_CONTROL_PLANE) await rm(dir, { recursive: true, force: true });
  }
  const onExit = (): void => {
    for (const c of [kwok, sched, kcm, api, etcd]) if (c && c.exitCode === null) c.kill('SIGKILL');
  };
  process.once('exit', onExit);

  return {
    dir,
    kubeconfigPath,
    server,
    auditLogPath,
    realNode,
    realNodeUnavailable: realNodeUnavailable_,
    async restartApiServer() {
      await stopProcess(api);
      api = startProcess(apiBin, apiArgs, apiLog);
      await waitHealthy(`${server}/readyz`, pki, api, 'kube-apiserver', apiLog);
    },
    async stopApiServer() {
      await stopProcess(api);
    },
    async startApiServer() {
      if (stopped || (api.exitCode === null && api.signalCode === null)) return;
      api = startProcess(apiBin, apiArgs, apiLog);
      await waitHealthy(`${server}/readyz`, pki, api, 'kube-apiserver', apiLog);
    },
    stop: stopAll,
  };
}
