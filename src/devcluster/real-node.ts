/**
 * The local control plane's real node, beside kwok's fake one: containerd (its own config, root,
 * state and socket under the control plane's directory), the kubelet and kube-proxy built from the
 * same k8s.io/kubernetes module as kube-apiserver, a CNI bridge on a subnet of its own, and the
 * images of test/images (pause, web, webhook, job) imported into containerd, since nothing can be
 * pulled. Pods that select this node really run.
 *
 * The node is tainted (REAL_NODE_TAINT, NoSchedule) and labelled (REAL_NODE_LABEL), so workloads
 * that do not ask for it keep landing on kwok's node and become Available at once; a pod that
 * runs here says so with a nodeSelector on the label and a toleration of the taint.
 *
 * One real node per machine at a time (kube-proxy's iptables chains and the bridge are global):
 * `claimNodeNetwork` takes a lock file, creates the bridge (before kube-apiserver, which binds to
 * the bridge's gateway address so pods reach it), and `release` deletes both. `stop` drains the
 * node (cordon, delete its pods, wait until the kubelet has stopped their sandboxes), stops
 * kube-proxy and removes its iptables chains, stops the kubelet and puts back the kernel settings
 * it changed, kills what containerd still runs, stops containerd, removes the kubelet's iptables
 * chains and unmounts what is left under its directory.
 *
 * Needs root, Linux, containerd, runc and the CNI plugins (scripts/ensure-packages.sh installs
 * them); `realNodeUnavailable` says in one line why a machine cannot have the node.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { adminRequest } from './admin-api.ts';
import type { Pki } from './certs.ts';
import { freePort, startProcess, stopProcess, tail } from './processes.ts';
import { cacheRoot, toolPath } from './tools.ts';
import { sleep } from '../util/sleep.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const REAL_NODE_NAME = 'hoist-real-node';
/** label of the real node (value "true"): a pod that must really run selects it */
export const REAL_NODE_LABEL = 'hoist.dev/real-node';
/** NoSchedule taint of the real node (same key, value "true"): only pods that tolerate it land there */
export const REAL_NODE_TAINT = 'hoist.dev/real-node';

export interface NodeNetwork {
  /** the Linux bridge the CNI bridge plugin attaches pods to */
  bridge: string;
  /** the pods' subnet (host-local IPAM) */
  subnet: string;
  /** the bridge's own address: the pods' gateway, and where kube-apiserver listens */
  gateway: string;
}

export const DEFAULT_NODE_NETWORK: NodeNetwork = { bridge: 'hoist0', subnet: '10.203.0.0/24', gateway: '10.203.0.1' };

/** What tests and the demo need to know about the node (plain data: vitest's provide() passes it on). */
export interface RealNodeInfo {
  name: string;
  /** the kubelet's report, e.g. containerd://1.6.20 */
  runtime: string;
  network: NodeNetwork;
  label: string;
  taint: string;
  /** image references by program name (pause, web, webhook, job), all present in containerd */
  images: Record<string, string>;
  /** containerd's socket, for `ctr --address` */
  containerdSocket: string;
}

export interface RealNode extends RealNodeInfo {
  /** imports an image archive (`podman save` output) into containerd's k8s.io namespace */
  importImages(archive: string): Promise<void>;
  /** tags an image already in containerd with another reference */
  tagImage(source: string, target: string): Promise<void>;
  stop(): Promise<void>;
}

/** Why this machine cannot run the real node (one line), or undefined when it can. Cheap: no process is started. */
export function realNodeUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `the real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'the real node needs root (containerd, the kubelet, a bridge and iptables rules)';
  const missing: string[] = [];
  const onPath = (cmd: string): boolean => (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, cmd)));
  for (const cmd of ['containerd', 'containerd-shim-runc-v2', 'ctr', 'runc', 'iptables', 'ip']) if (!onPath(cmd)) missing.push(cmd);
  for (const plugin of ['bridge', 'host-local', 'portmap', 'loopback']) if (!existsSync(join(CNI_BIN_DIR, plugin))) missing.push(`${CNI_BIN_DIR}/${plugin}`);
  if (missing.length > 0)
    return `the real node needs ${missing.join(', ')} (scripts/ensure-packages.sh installs containerd, containernetworking-plugins and iptables)`;
  if (!existsSync('/sys/fs/cgroup/memory') && !existsSync('/sys/fs/cgroup/cgroup.controllers')) return 'the real node needs cgroups mounted at /sys/fs/cgroup';
  return undefined;
}

const CNI_BIN_DIR = '/usr/lib/cni';

async function sh(cmd: string, args: readonly string[], timeout = 60_000): Promise<string> {
  const { stdout } = await run(cmd, args, { timeout, maxBuffer: 16 << 20 });
  return stdout;
}

/** like sh, but never throws: for cleanup steps whose failure must not stop the next one */
async function tryRun(cmd: string, args: readonly string[], timeout = 60_000): Promise<{ ok: boolean; out: string }> {
  try {
    return { ok: true, out: await sh(cmd, args, timeout) };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { ok: false, out: (err.stderr || err.message).trim() };
  }
}

function lockPath(): string {
  return join(cacheRoot(), 'real-node.lock');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ClaimedNetwork {
  network: NodeNetwork;
  release(): Promise<void>;
}

/**
 * Takes the machine's real-node lock and creates the bridge with its gateway address, so
 * kube-apiserver can bind there before the node exists. A lock left by a process that is gone is
 * taken over, and the bridge it left behind is deleted first.
 */
export async function claimNodeNetwork(
  dir: string,
  network: NodeNetwork = DEFAULT_NODE_NETWORK,
  log: (line: string) => void = () => {},
): Promise<ClaimedNetwork> {
  const lock = lockPath();
  await mkdir(cacheRoot(), { recursive: true });
  if (existsSync(lock)) {
    const [pid, owner] = readFileSync(lock, 'utf8').split('\n');
    if (pid && Number(pid) !== process.pid && alive(Number(pid))) {
      throw new Error(
        `another real node is running (pid ${pid}, control plane ${owner}; lock ${lock}): one per machine, since kube-proxy's iptables chains and the bridge ${network.bridge} are shared`,
      );
    }
    log(`taking over the real-node lock of pid ${pid}, which is gone`);
    if (owner && owner.startsWith('/') && owner !== dir) await recoverAbandoned(owner, log);
  }
  await writeFile(lock, `${process.pid}\n${dir}\n`);
  if ((await tryRun('ip', ['link', 'show', network.bridge])).ok) {
    log(`deleting bridge ${network.bridge} left by an earlier run`);
    await tryRun('ip', ['link', 'delete', network.bridge]);
  }
  const prefix = network.subnet.split('/')[1];
  try {
    await sh('ip', ['link', 'add', 'name', network.bridge, 'type', 'bridge']);
    await sh('ip', ['addr', 'add', `${network.gateway}/${prefix}`, 'dev', network.bridge]);
    await sh('ip', ['link', 'set', network.bridge, 'up']);
  } catch (e) {
    await tryRun('ip', ['link', 'delete', network.bridge]);
    await rm(lock, { force: true });
    throw new Error(
      `creating bridge ${network.bridge} (${network.gateway}/${prefix}) failed: ${(e as { stderr?: string }).stderr?.trim() || (e as Error).message}`,
    );
  }
  let released = false;
  return {
    network,
    async release() {
      if (released) return;
      released = true;
      await tryRun('ip', ['link', 'delete', network.bridge]);
      if (existsSync(lock) && readFileSync(lock, 'utf8').split('\n')[0] === String(process.pid)) await rm(lock, { force: true });
    },
  };
}

/** kernel settings the kubelet changes at start-up (kernel.panic 10, kernel.panic_on_oops 1, vm.overcommit_memory 1) */
const KUBELET_SYSCTLS = ['kernel/panic', 'kernel/panic_on_oops', 'vm/overcommit_memory'];

/** writes back the values read before the kubelet started, where they differ now */
async function restoreSysctls(before: ReadonlyMap<string, string>, log: (line: string) => void): Promise<void> {
  for (const [key, value] of before) {
    if (!value) continue;
    const now = (await readFile(`/proc/sys/${key}`, 'utf8').catch(() => '')).trim();
    if (now === value) continue;
    await writeFile(`/proc/sys/${key}`, value).catch((e: Error) => log(`could not restore ${key.replace('/', '.')}=${value}: ${e.message}`));
  }
}

/** kills and deletes every task (container) containerd runs in k8s.io, so their shims exit */
async function killTasks(socket: string): Promise<void> {
  const ctr = (args: readonly string[]) => tryRun('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args], 30_000);
  const ids = (await ctr(['tasks', 'ls', '-q'])).out.split('\n').filter((l) => /^[0-9a-f]{64}$/.test(l.trim()));
  for (const id of ids) await ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]);
  for (const id of ids)
    await waitFor(
      'task still running',
      10_000,
      async () => ((await ctr(['tasks', 'delete', id])).ok ? true : undefined),
      () => id,
    ).catch(() => undefined);
}

/** pids of processes whose command line mentions `path` */
async function processesUsing(path: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(path)) pids.push(Number(entry));
  }
  return pids;
}

/** lazily unmounts everything mounted under dir, deepest first (a pod's volumes, a rootfs, a netns) */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8').catch(() => ''))
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(dir + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await tryRun('umount', ['-l', m]);
}

/**
 * What a run that died without stopping its node left behind (its lock names its directory):
 * containerd is started once more on its old configuration, which reconnects to the shims still
 * running, to kill every container; then its mounts, kube-proxy's and the kubelet's iptables
 * chains go. The bridge is deleted by the caller.
 */
async function recoverAbandoned(oldDir: string, log: (line: string) => void): Promise<void> {
  const base = join(oldDir, 'node');
  const config = join(base, 'containerd.toml');
  // its kubelet, kube-proxy or containerd may still run (a parent killed with SIGKILL cannot stop
  // them); its shims stay: killing one would orphan its container, containerd stops them below
  for (const pid of await processesUsing(`${base}/`)) {
    const argv0 = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')[0] ?? '';
    if (!argv0.split('/').pop()!.startsWith('containerd-shim')) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  await sleep(500);
  if (existsSync(config)) {
    const socket = join(base, 'containerd.sock');
    const c = startProcess('containerd', ['--config', config], join(base, 'containerd-recover.log'));
    const up = await waitFor(
      'containerd',
      20_000,
      async () => ((await tryRun('ctr', ['--address', socket, 'version'], 5000)).ok ? true : undefined),
      () => '',
    ).catch(() => false);
    if (up) await killTasks(socket);
    await stopProcess(c, 10_000);
  }
  await unmountUnder(base);
  await tryRun(toolPath('kube-proxy'), ['--cleanup', '--v=0']);
  await removeKubeletChains();
  await rm(oldDir, { recursive: true, force: true }).catch(() => undefined);
  log(`cleaned up the real node an earlier run left in ${oldDir}`);
}

/** chains the kubelet creates in every table of iptables and ip6tables, and never removes */
const KUBELET_CHAINS = ['KUBE-FIREWALL', 'KUBE-KUBELET-CANARY', 'KUBE-IPTABLES-HINT'];

/** removes the kubelet's chains and the rules jumping to them (`-A INPUT -j KUBE-FIREWALL`) */
async function removeKubeletChains(): Promise<void> {
  for (const ipt of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const rules = await tryRun(ipt, ['-w', '-t', table, '-S']);
      if (!rules.ok) continue;
      for (const line of rules.out.split('\n')) {
        const jump = /^-A (\S+) -j (\S+)$/.exec(line.trim());
        if (jump && KUBELET_CHAINS.includes(jump[2]!)) await tryRun(ipt, ['-w', '-t', table, '-D', jump[1]!, '-j', jump[2]!]);
      }
      for (const chain of KUBELET_CHAINS) {
        if (!rules.out.includes(`-N ${chain}\n`) && !rules.out.endsWith(`-N ${chain}`)) continue;
        await tryRun(ipt, ['-w', '-t', table, '-F', chain]);
        await tryRun(ipt, ['-w', '-t', table, '-X', chain]);
      }
    }
  }
}

export interface RealNodeOptions {
  /** the control plane's directory; the node keeps everything under <dir>/node */
  dir: string;
  server: string;
  kubeconfigPath: string;
  pki: Pki;
  network: NodeNetwork;
  log: (line: string) => void;
}

/** scripts/node-images.sh: the archive of test/images (built once, cached by content) and each image's reference */
async function nodeImages(): Promise<{ archive: string; images: Record<string, string> }> {
  let out: string;
  try {
    out = (await run('bash', [join(ROOT, 'scripts/node-images.sh')], { timeout: 600_000, maxBuffer: 1 << 20 })).stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`building the real node's images (scripts/node-images.sh) failed: ${(err.stderr || err.message).trim().split('\n').slice(-3).join(' ')}`);
  }
  const [archive, ...lines] = out.trim().split('\n');
  const images: Record<string, string> = {};
  for (const line of lines) {
    const [name, ref] = line.split(' ');
    if (name && ref) images[name] = ref;
  }
  if (!archive || !images.pause) throw new Error(`scripts/node-images.sh printed no archive or pause image: ${out.trim()}`);
  return { archive, images };
}

function containerdConfig(base: string, socket: string, pauseImage: string, cniConfDir: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `# written by src/devcluster/real-node.ts: the real node's own containerd (nothing global is read or changed)
version = 2
root = "${base}/root"
state = "${base}/state"
oom_score = 0

[grpc]
  address = "${socket}"

[ttrpc]
  address = "${socket}.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "${base}/opt"

[${cri}]
  # no image can be pulled: the sandbox image is built here (test/images/pause) and imported
  sandbox_image = "${pauseImage}"
  # this VM has no CAP_SYS_RESOURCE: without it every sandbox fails with runc's
  # "can't get final child's PID from pipe: EOF" (it would lower oom_score_adj)
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # pod network namespaces under the state dir, not the machine's /var/run/netns
  netns_mounts_under_state_dir = true
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [${cri}.cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${cniConfDir}"
    max_conf_num = 1
`;
}

function cniConflist(network: NodeNetwork, ipamDir: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'hoist',
      plugins: [
        {
          type: 'bridge',
          bridge: network.bridge,
          isGateway: true,
          // pod traffic stays on this machine: nothing is masqueraded to the outside
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', dataDir: ipamDir, ranges: [[{ subnet: network.subnet, gateway: network.gateway }]], routes: [{ dst: '0.0.0.0/0' }] },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(o: { base: string; socket: string; port: number; healthzPort: number; gateway: string; caCert: string }): string {
  return `# written by src/devcluster/real-node.ts
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://${o.socket}
# this machine: cgroup v1 with a cgroup2 "unified" mount, no systemd, no CAP_SYS_RESOURCE
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
address: ${o.gateway}
port: ${o.port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${o.healthzPort}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${o.caCert} }
authorization:
  mode: Webhook
registerWithTaints:
  - { key: ${REAL_NODE_TAINT}, value: "true", effect: NoSchedule }
podLogsDir: ${o.base}/pod-logs
volumePluginDir: ${o.base}/volume-plugins
# the images cannot be pulled again: never garbage-collect them, never evict for disk
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%" }
maxPods: 60
serializeImagePulls: false
shutdownGracePeriod: 0s
`;
}

function kubeProxyConfig(o: { kubeconfig: string; healthzPort: number; metricsPort: number; subnet: string }): string {
  return `# written by src/devcluster/real-node.ts
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: ${REAL_NODE_NAME}
clientConnection: { kubeconfig: ${o.kubeconfig} }
healthzBindAddress: 127.0.0.1:${o.healthzPort}
metricsBindAddress: 127.0.0.1:${o.metricsPort}
clusterCIDR: ${o.subnet}
# leave the machine's conntrack settings as they are (0: do not write the sysctls)
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
iptables: { localhostNodePorts: false, masqueradeAll: false }
`;
}

async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, why: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} after ${timeoutMs / 1000}s; ${why()}`);
    await sleep(250);
  }
}

interface NodeObject {
  status?: { conditions?: { type: string; status: string; message?: string }[]; nodeInfo?: { containerRuntimeVersion?: string } };
}

export async function startRealNode(o: RealNodeOptions): Promise<RealNode> {
  const started = Date.now();
  const base = join(o.dir, 'node');
  const socket = join(base, 'containerd.sock');
  for (const d of ['cni/net.d', 'cni/ipam', 'kubelet', 'kubelet-pki', 'pod-logs', 'volume-plugins']) await mkdir(join(base, d), { recursive: true });
  const kubeletBin = toolPath('kubelet');
  const proxyBin = toolPath('kube-proxy');
  const { archive, images } = await nodeImages();

  const sysctls = new Map<string, string>();
  let containerd: ChildProcess | undefined;
  let kubelet: ChildProcess | undefined;
  let proxy: ChildProcess | undefined;
  const ctr = (args: readonly string[], timeout = 120_000): Promise<string> => sh('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args], timeout);
  const api = (method: string, path: string, body?: unknown, type?: string) => adminRequest(o.server, o.pki, method, path, body, type);

  const stop = async (): Promise<void> => {
    process.removeListener('exit', onExit);
    const stopStarted = Date.now();
    // 1. drain: no new pod lands here; the kubelet stops every pod's containers and sandbox (CNI DEL)
    if (kubelet && kubelet.exitCode === null) {
      await api('PATCH', `/api/v1/nodes/${REAL_NODE_NAME}`, { spec: { unschedulable: true } }, 'application/merge-patch+json').catch(() => undefined);
      type PodMeta = { metadata: { name: string; namespace: string; deletionTimestamp?: string } };
      const podsHere = async (): Promise<PodMeta[]> => {
        const r = await api('GET', `/api/v1/pods?fieldSelector=spec.nodeName%3D${REAL_NODE_NAME}`);
        return (r.body as { items?: PodMeta[] } | undefined)?.items ?? [];
      };
      // each round deletes what is still there and not yet being deleted: a pod created (or
      // listed late) after the first round is drained too
      let left: string[] = [];
      await waitFor(
        'pods still on the real node',
        60_000,
        async () => {
          const pods = await podsHere();
          for (const p of pods.filter((x) => !x.metadata.deletionTimestamp)) {
            await api('DELETE', `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`, { gracePeriodSeconds: 1 }).catch(() => undefined);
          }
          left = pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
          return left.length === 0 ? true : undefined;
        },
        () => left.join(', '),
      ).catch((e: Error) => o.log(`${e.message}: stopping anyway`));
    }
    const steps: string[] = [];
    let mark = stopStarted;
    const step = (name: string): void => {
      steps.push(`${name} ${((Date.now() - mark) / 1000).toFixed(1)}s`);
      mark = Date.now();
    };
    step('drain');
    // 2. kube-proxy and its iptables chains
    await stopProcess(proxy);
    if (proxy) {
      const r = await tryRun(proxyBin, ['--cleanup', '--v=0']);
      if (!r.ok) o.log(`kube-proxy --cleanup: ${r.out.split('\n').slice(-2).join(' ')}`);
    }
    step('kube-proxy');
    await stopProcess(kubelet, 10_000);
    await restoreSysctls(sysctls, o.log);
    step('kubelet');
    // 3. whatever containerd still runs (a pod the drain missed): kill and delete, so the shims exit
    if (containerd && containerd.exitCode === null) await killTasks(socket);
    step('containers');
    await stopProcess(containerd, 10_000);
    step('containerd');
    // 4. the kubelet's own iptables chains, IPv4 and IPv6 (kube-proxy --cleanup removed kube-proxy's)
    await removeKubeletChains();
    // 5. mounts left under the node's directory (a pod's volumes, a container's rootfs, a netns)
    await unmountUnder(base);
    step('chains and mounts');
    o.log(`real node stopped in ${((Date.now() - stopStarted) / 1000).toFixed(1)}s (${steps.join(', ')})`);
  };

  // when this process exits without stop() (an uncaught error), the node's processes go with it;
  // what they ran is cleaned up by the next start (recoverAbandoned)
  const onExit = (): void => {
    for (const c of [proxy, kubelet, containerd]) if (c && c.exitCode === null) c.kill('SIGKILL');
  };
  process.once('exit', onExit);

  try {
    // containerd
    await writeFile(join(base, 'containerd.toml'), containerdConfig(join(base, 'containerd'), socket, images.pause!, join(base, 'cni/net.d')));
    await writeFile(join(base, 'cni/net.d/10-hoist.conflist'), cniConflist(o.network, join(base, 'cni/ipam')));
    const containerdLog = join(o.dir, 'containerd.log');
    containerd = startProcess('containerd', ['--config', join(base, 'containerd.toml')], containerdLog);
    await waitFor(
      `containerd did not answer on ${socket} (setting: grpc.address in ${join(base, 'containerd.toml')})`,
      30_000,
      async () => {
        if (containerd!.exitCode !== null) throw new Error(`containerd exited with code ${containerd!.exitCode}:\n${tail(containerdLog)}`);
        return (await ctr(['version'], 5000)) ? true : undefined;
      },
      () => `last log lines:\n${tail(containerdLog)}`,
    ).catch((e: Error) => {
      if (containerd!.exitCode !== null)
        throw new Error(
          `containerd exited with code ${containerd!.exitCode} (config ${join(base, 'containerd.toml')}); last log lines:\n${tail(containerdLog)}`,
        );
      throw e;
    });
    const version = (await sh('containerd', ['--version'])).trim().split(' ')[2] ?? 'unknown';
    await ctr(['images', 'import', archive], 300_000).catch((e: { stderr?: string; message: string }) => {
      throw new Error(`importing ${archive} into containerd failed: ${(e.stderr || e.message).trim()}`);
    });
    o.log(`containerd ${version} ready on ${socket}; imported ${Object.values(images).join(', ')}`);

    // kubelet (it sets these kernel settings to its liking; stop() puts the machine's values back)
    for (const key of KUBELET_SYSCTLS) sysctls.set(key, (await readFile(`/proc/sys/${key}`, 'utf8').catch(() => '')).trim());
    const [port, healthzPort] = [await freePort(), await freePort()];
    await writeFile(join(base, 'kubelet.yaml'), kubeletConfig({ base, socket, port, healthzPort, gateway: o.network.gateway, caCert: o.pki.caCert }));
    const kubeletLog = join(o.dir, 'kubelet.log');
    kubelet = startProcess(
      kubeletBin,
      [
        `--config=${join(base, 'kubelet.yaml')}`,
        `--kubeconfig=${o.kubeconfigPath}`,
        `--root-dir=${join(base, 'kubelet')}`,
        `--cert-dir=${join(base, 'kubelet-pki')}`,
        `--hostname-override=${REAL_NODE_NAME}`,
        `--node-ip=${o.network.gateway}`,
        `--node-labels=${REAL_NODE_LABEL}=true`,
        '--v=1',
      ],
      kubeletLog,
    );
    let readyCondition = 'not registered';
    const node = await waitFor(
      `node ${REAL_NODE_NAME} not Ready (kubelet settings in ${join(base, 'kubelet.yaml')})`,
      120_000,
      async () => {
        if (kubelet!.exitCode !== null) throw new Error('exited');
        const r = await api('GET', `/api/v1/nodes/${REAL_NODE_NAME}`);
        const n = r.body as NodeObject | undefined;
        const c = n?.status?.conditions?.find((x) => x.type === 'Ready');
        if (c) readyCondition = `Ready=${c.status}: ${c.message ?? ''}`;
        return r.answer === 'ok' && c?.status === 'True' ? n : undefined;
      },
      () => `${readyCondition}; last kubelet log lines (${kubeletLog}):\n${tail(kubeletLog, 10)}`,
    ).catch((e: Error) => {
      if (kubelet!.exitCode !== null)
        throw new Error(`the kubelet exited with code ${kubelet!.exitCode} (settings in ${join(base, 'kubelet.yaml')}); last log lines:\n${tail(kubeletLog)}`);
      throw e;
    });

    // kube-proxy: ClusterIP Services (the `kubernetes` one first) through iptables
    const [proxyHealthz, proxyMetrics] = [await freePort(), await freePort()];
    await writeFile(
      join(base, 'kube-proxy.yaml'),
      kubeProxyConfig({ kubeconfig: o.kubeconfigPath, healthzPort: proxyHealthz, metricsPort: proxyMetrics, subnet: o.network.subnet }),
    );
    const proxyLog = join(o.dir, 'kube-proxy.log');
    proxy = startProcess(proxyBin, [`--config=${join(base, 'kube-proxy.yaml')}`, '--v=1'], proxyLog);
    await waitFor(
      `kube-proxy not healthy on 127.0.0.1:${proxyHealthz} (settings in ${join(base, 'kube-proxy.yaml')})`,
      60_000,
      async () => {
        if (proxy!.exitCode !== null) throw new Error('exited');
        const r = await fetch(`http://127.0.0.1:${proxyHealthz}/healthz`, { signal: AbortSignal.timeout(2000) });
        return r.ok ? true : undefined;
      },
      () => `last kube-proxy log lines:\n${tail(proxyLog)}`,
    ).catch((e: Error) => {
      if (proxy!.exitCode !== null)
        throw new Error(`kube-proxy exited with code ${proxy!.exitCode} (settings in ${join(base, 'kube-proxy.yaml')}); last log lines:\n${tail(proxyLog)}`);
      throw e;
    });
    const runtime = node.status?.nodeInfo?.containerRuntimeVersion ?? `containerd://${version}`;
    o.log(`real node ${REAL_NODE_NAME} Ready (${runtime}, pods on ${o.network.bridge} ${o.network.subnet}) in ${((Date.now() - started) / 1000).toFixed(1)}s`);

    return {
      name: REAL_NODE_NAME,
      runtime,
      network: o.network,
      label: REAL_NODE_LABEL,
      taint: REAL_NODE_TAINT,
      images,
      containerdSocket: socket,
      async importImages(path) {
        await ctr(['images', 'import', path], 600_000);
      },
      async tagImage(source, target) {
        await ctr(['images', 'tag', '--force', source, target]);
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
