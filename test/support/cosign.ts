/**
 * The real cosign CLI for tests (built from its Go module by scripts/ensure-tools.sh; Hoist never
 * runs it): key pairs made by `cosign generate-key-pair` or imported with `import-key-pair`, and
 * `cosign sign --key` without the transparency log (it needs the network). Keys have no password;
 * a TLS registry's CA is trusted through Go's SSL_CERT_FILE; HOME is the test's work directory, so
 * nothing lands in the user's ~/.sigstore.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolPath } from '../../src/devcluster/tools.ts';

const exec = promisify(execFile);

export interface CosignKey {
  /** cosign's encrypted private key file */
  key: string;
  /** PEM public key */
  pub: string;
}

export interface Cosign {
  run(args: string[], env?: Record<string, string>): Promise<string>;
  /** `cosign generate-key-pair` (ECDSA P-256) in work/<name> */
  generate(name: string): Promise<CosignKey>;
  /** an RSA or ed25519 key made with node:crypto, imported with `cosign import-key-pair` */
  imported(name: string, type: 'rsa' | 'ed25519'): Promise<CosignKey>;
  /** signs `ref` (pinned by digest); `extra` flags and `env` as given */
  sign(key: CosignKey, ref: string, extra?: string[], env?: Record<string, string>): Promise<void>;
}

export function cosignCli(work: string, caCertPath?: string): Cosign {
  const bin = toolPath('cosign');
  const run = async (args: string[], env: Record<string, string> = {}, cwd = work): Promise<string> => {
    const { stdout } = await exec(bin, args, {
      cwd,
      env: { ...process.env, COSIGN_PASSWORD: '', HOME: work, ...(caCertPath ? { SSL_CERT_FILE: caCertPath } : {}), ...env },
      maxBuffer: 16 << 20,
    });
    return stdout;
  };
  return {
    run,
    async generate(name) {
      const dir = join(work, name);
      await mkdir(dir);
      await run(['generate-key-pair'], {}, dir);
      return { key: join(dir, 'cosign.key'), pub: await readFile(join(dir, 'cosign.pub'), 'utf8') };
    },
    async imported(name, type) {
      const dir = join(work, name);
      await mkdir(dir);
      const pair = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
      await writeFile(join(dir, 'plain.key'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      await run(['import-key-pair', '--key', join(dir, 'plain.key'), '--output-key-prefix', 'imported'], {}, dir);
      return { key: join(dir, 'imported.key'), pub: await readFile(join(dir, 'imported.pub'), 'utf8') };
    },
    async sign(key, ref, extra = [], env = {}) {
      await run(['sign', '--key', key.key, '--tlog-upload=false', '--yes', ...extra, ref], env);
    },
  };
}
