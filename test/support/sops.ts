/**
 * The real sops and age-keygen for tests (built from their Go modules by scripts/ensure-tools.sh;
 * Hoist never runs them): age key pairs made by `age-keygen`, files encrypted by `sops -e` and
 * the reference decryption `sops -d`. Each runs in the test's work directory with HOME there and
 * no SOPS_* variable of the caller's environment, so no .sops.yaml or key of the machine is used.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolPath } from '../../src/devcluster/tools.ts';

const exec = promisify(execFile);

export interface AgeKey {
  /** the key file age-keygen wrote (comments and the AGE-SECRET-KEY-1… line) */
  file: string;
  text: string;
  /** age1…: the public recipient */
  recipient: string;
}

export interface SopsEncryptOptions {
  /** flags of sops -e: --encrypted-regex, --unencrypted-suffix, --mac-only-encrypted, ... */
  flags?: string[];
  /** the file's name: its extension chooses sops's store (.yaml, .json) */
  name?: string;
}

export interface Sops {
  /** age-keygen -o work/<name>.agekey (add `pq` for a post-quantum hybrid key) */
  keygen(name: string, pq?: boolean): Promise<AgeKey>;
  /** sops -e of `plaintext` for the recipients; the encrypted text */
  encrypt(plaintext: string, recipients: readonly AgeKey[], opts?: SopsEncryptOptions): Promise<string>;
  /** sops -d of `encrypted` with `key`; rejects with sops's stderr when sops refuses */
  decrypt(encrypted: string, key: AgeKey, name?: string): Promise<string>;
}

export function sopsCli(work: string): Sops {
  const sops = toolPath('sops');
  const keygen = toolPath('age-keygen');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SOPS_') && !k.startsWith('AGE_')));
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ ...clean, HOME: work, ...extra });
  let n = 0;
  const scratch = async (text: string, name: string): Promise<string> => {
    const dir = join(work, `sops-${++n}`);
    await mkdir(dir, { recursive: true });
    const file = join(dir, name);
    await writeFile(file, text);
    return file;
  };
  return {
    async keygen(name, pq = false) {
      const file = join(work, `${name}.agekey`);
      await exec(keygen, [...(pq ? ['-pq'] : []), '-o', file], { env: env() });
      const text = await readFile(file, 'utf8');
      const recipient = /public key: (age1\S+)/.exec(text)?.[1];
      if (!recipient) throw new Error(`age-keygen wrote no public key: ${text.split('\n')[0]}`);
      return { file, text, recipient };
    },
    async encrypt(plaintext, recipients, opts = {}) {
      const file = await scratch(plaintext, opts.name ?? 'file.yaml');
      const { stdout } = await exec(sops, ['--encrypt', '--age', recipients.map((r) => r.recipient).join(','), ...(opts.flags ?? []), file], {
        env: env(),
        cwd: work,
        maxBuffer: 64 << 20,
      });
      return stdout;
    },
    async decrypt(encrypted, key, name = 'file.yaml') {
      const file = await scratch(encrypted, name);
      try {
        const { stdout } = await exec(sops, ['--decrypt', file], { env: env({ SOPS_AGE_KEY_FILE: key.file }), cwd: work, maxBuffer: 64 << 20 });
        return stdout;
      } catch (e) {
        throw new Error(`sops -d refused: ${(e as { stderr?: string }).stderr ?? String(e)}`);
      }
    },
  };
}
