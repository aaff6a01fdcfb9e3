/**
 * What the processors use of SOPS: one decryptor per render, holding the render's age identities
 * (spec.decryption, read from the cluster by the caller) and what it decrypted.
 *
 * A manifest or values file is SOPS-encrypted when its text carries the marker SOPS writes
 * (`mac: ENC[`, or `"mac": "ENC[` in JSON: Flux's kustomize-controller detects files the same
 * way) and its first document has a top-level `sops` mapping with a `mac`. Such a file is read
 * as sops reads it (`.json` files by the JSON store, any other by the YAML store), decrypted and
 * MAC-checked (sops-decrypt.ts), and handed to the processor as JSON text, in memory only: nothing
 * decrypted is written anywhere. Files without the marker are returned as they are.
 *
 * The decrypted values' texts are collected (`sensitive`) so callers keep them out of what they
 * print (`hoist render`, `hoist diff`) and out of messages.
 */
import type { YamlBudget } from '../yaml/budget.ts';
import { ProcessCode, processError } from '../errors.ts';
import type { DecryptionKeys } from './age-keys.ts';
import { decryptSopsFile, hasSopsMetadata, type DecryptedFile } from './sops-decrypt.ts';
import { readSopsJson, readSopsYaml } from './sops-tree.ts';

const MARKER = /\bmac["']?\s*:\s*["']?ENC\[AES256_GCM,/;

/** whether `text` carries the marker of a SOPS-encrypted file (cheap: no parse) */
export function looksSopsEncrypted(text: string): boolean {
  return text.includes('ENC[AES256_GCM,') && MARKER.test(text);
}

export interface BundleDecryptor {
  /**
   * The text a processor reads for `file`: when the file is SOPS-encrypted, its decrypted
   * documents as a JSON stream (what reading `sops -d`'s output gives); otherwise `text`.
   * Throws a terminal HoistError (stage process, subject the file) when it cannot be decrypted.
   */
  manifestText(text: string, file: string): Promise<string>;
  /** the decrypted values' texts of every file decrypted so far */
  readonly sensitive: ReadonlySet<string>;
  /** the files decrypted so far, by their encrypted MAC (kustomize matches its output to them) */
  readonly byMac: ReadonlyMap<string, { file: string; decrypted: DecryptedFile }>;
}

/** `keys`: spec.decryption's identities, undefined when the BundleDeployment sets no decryption */
export function bundleDecryptor(keys: DecryptionKeys | undefined, budget: YamlBudget): BundleDecryptor {
  const sensitive = new Set<string>();
  const byMac = new Map<string, { file: string; decrypted: DecryptedFile }>();
  return {
    sensitive,
    byMac,
    async manifestText(text, file) {
      const decrypted = await decryptIfEncrypted(text, file, keys, budget);
      if (!decrypted) return text;
      for (const s of decrypted.sensitive) sensitive.add(s);
      byMac.set(decrypted.mac, { file, decrypted });
      return decrypted.documents.map((d) => JSON.stringify(d)).join('\n');
    },
  };
}

/** The file decrypted, or undefined when it is not SOPS-encrypted. */
export async function decryptIfEncrypted(text: string, file: string, keys: DecryptionKeys | undefined, budget: YamlBudget): Promise<DecryptedFile | undefined> {
  if (!looksSopsEncrypted(text)) return undefined;
  const tree = /\.json$/i.test(file) ? readSopsJson(text, file) : readSopsYaml(text, file, budget);
  const [first, ...rest] = tree.branches;
  if (!first || !hasSopsMetadata(first)) {
    if (rest.some(hasSopsMetadata))
      throw processError('sops: the sops metadata must be in the first document (sops reads it there only)', ProcessCode.DecryptFailed, file);
    return undefined;
  }
  return decryptSopsFile(tree, file, keys);
}
