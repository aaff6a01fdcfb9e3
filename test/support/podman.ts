/**
 * The container engine for tests: podman configured by scripts/podman-env.sh (Hoist's own
 * containers.conf, storage and registries under the tool cache; nothing global touched), the
 * controller image built by scripts/image.sh (cached by a hash of its inputs), and podman's
 * Docker-API socket for testcontainers. The service process is stopped by its own pid only.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sleep } from './wait.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENV_KEYS = ['CONTAINERS_CONF', 'CONTAINERS_STORAGE_CONF', 'CONTAINERS_REGISTRIES_CONF', 'HOIST_PODMAN_DIR'] as const;

export type PodmanEnv = Record<(typeof ENV_KEYS)[number], string>;

/** podman's settings from scripts/podman-env.sh (installing podman when missing), or why there is no podman */
export async function podmanEnv(): Promise<{ env: PodmanEnv } | { unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: `podman containers need Linux (this is ${process.platform})` };
  try {
    const script = `. scripts/podman-env.sh >&2 && podman info --format '{{.Host.OCIRuntime.Name}}' >&2 && ${ENV_KEYS.map((k) => `echo "$${k}"`).join(' && ')}`;
    const { stdout } = await run('bash', ['-c', script], { cwd: ROOT, timeout: 300_000 });
    const values = stdout.trim().split('\n');
    return { env: Object.fromEntries(ENV_KEYS.map((k, i) => [k, values[i] ?? ''])) as PodmanEnv };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { unavailable: `podman is not usable here: ${(err.stderr || err.message).trim().split('\n').slice(-3).join(' ')}` };
  }
}

/** `npm run image` (scripts/image.sh): the image reference and how long it took (cached: about a second) */
export async function buildImage(): Promise<{ ref: string; ms: number; log: string }> {
  const start = Date.now();
  const { stdout, stderr } = await run('bash', ['scripts/image.sh'], { cwd: ROOT, timeout: 900_000, maxBuffer: 16 << 20 });
  return { ref: stdout.trim().split('\n').pop()!, ms: Date.now() - start, log: stderr };
}

/** runs podman with Hoist's configuration */
export async function podman(env: PodmanEnv, args: readonly string[]): Promise<string> {
  const { stdout } = await run('podman', args, { env: { ...process.env, ...env }, timeout: 120_000 });
  return stdout.trim();
}

/** a container's whole log as podman stored it (stdout and stderr), complete once it has exited */
export async function podmanLogs(env: PodmanEnv, id: string): Promise<string> {
  const { stdout, stderr } = await run('podman', ['logs', id], { env: { ...process.env, ...env }, timeout: 120_000, maxBuffer: 64 << 20 });
  return stdout + stderr;
}

export interface PodmanService {
  /** unix:///…/podman.sock, for DOCKER_HOST */
  dockerHost: string;
  stop(): Promise<void>;
}

/** `podman system service` on a private socket: the Docker API testcontainers speaks */
export async function startPodmanService(env: PodmanEnv): Promise<PodmanService> {
  const dir = await mkdtemp(join(tmpdir(), 'hoist-podman-'));
  const sock = join(dir, 'podman.sock');
  const child = spawn('podman', ['system', 'service', '--time=0', `unix://${sock}`], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const deadline = Date.now() + 30_000;
  while (!existsSync(sock)) {
    if (child.exitCode !== null) throw new Error(`podman system service exited ${child.exitCode}: ${err}`);
    if (Date.now() > deadline) throw new Error(`podman system service did not create ${sock} in 30s: ${err}`);
    await sleep(100);
  }
  return {
    dockerHost: `unix://${sock}`,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** points testcontainers at a podman socket: no Ryuk (its image cannot be pulled), mapped ports on loopback */
export function useForTestcontainers(service: PodmanService): void {
  process.env.DOCKER_HOST = service.dockerHost;
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  process.env.TESTCONTAINERS_HOST_OVERRIDE = '127.0.0.1';
}
