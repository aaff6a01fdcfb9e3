/**
 * SOPS-encrypted objects in a renderer's output (kustomize): kustomize builds the encrypted files
 * as they are (a `sops` field and `ENC[...]` values pass through it), so its output is decrypted
 * object by object, as Flux's kustomize-controller does. Unlike Flux, every such object must come
 * from a file of the tree that was decrypted and MAC-checked whole first (matched by its encrypted
 * MAC, unique per encryption): an object whose `sops` metadata no verified file has is refused.
 * Its encrypted values are decrypted with that file's data key (each value authenticated by
 * AES-GCM with its path), so what kustomize added or changed in the clear parts (a namePrefix,
 * labels, a namespace) stays as kustomize made it, and a value in an encrypted part that is not
 * encrypted is refused as sops refuses it.
 *
 * Pure: objects and the decrypted files in, objects out (changed in place).
 */
import type { KubeObject } from '../../kube/types.ts';
import { isJsonObject, setKey, type JsonObject, type JsonValue } from '../yaml/values.ts';
import { ProcessCode, processError } from '../errors.ts';
import type { HoistError } from '../../util/errors.ts';
import { scalarJson, type DecryptedFile } from './sops-decrypt.ts';

/** the encrypted MAC of an object carrying SOPS metadata, or undefined */
export function sopsMacOf(obj: KubeObject): string | undefined {
  const meta = (obj as unknown as JsonObject)['sops'];
  if (!isJsonObject(meta)) return undefined;
  const mac = meta['mac'];
  return typeof mac === 'string' ? mac : undefined;
}

/**
 * Decrypts `obj` (which carries SOPS metadata) with the file of the same MAC, in place, and drops
 * its `sops` field; returns the problems (naming the object and the path, never a value).
 */
export function decryptRenderedObject(
  obj: KubeObject,
  byMac: ReadonlyMap<string, { file: string; decrypted: DecryptedFile }>,
  sensitive: Set<string>,
  subject: string,
): HoistError[] {
  const record = obj as unknown as JsonObject;
  const mac = sopsMacOf(obj);
  const what = `${obj.apiVersion} ${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
  const from = mac === undefined ? undefined : byMac.get(mac);
  if (!from) {
    return [
      processError(
        `${what} carries SOPS metadata of no encrypted file of the tree that decrypts (sops: it was not encrypted by sops as a whole file)`,
        ProcessCode.DecryptFailed,
        subject,
      ),
    ];
  }
  const { decrypted } = from;
  const where = `${subject}: ${what} (from ${from.file})`;
  try {
    const walk = (v: JsonValue, path: string[]): JsonValue => {
      if (Array.isArray(v)) return v.map((x) => walk(x, path));
      if (isJsonObject(v)) {
        const out: JsonObject = {};
        for (const [k, x] of Object.entries(v)) setKey(out, k, walk(x, [...path, k]));
        return out;
      }
      if (v === null || !decrypted.isEncrypted(path)) return v;
      if (typeof v !== 'string')
        throw processError(`sops: the value at ${path.join('.')} should be encrypted but is a ${typeof v}`, ProcessCode.DecryptFailed, where);
      const plain = decrypted.decryptValue(v, path);
      if (plain.t !== 'bool' && plain.t !== 'null') sensitive.add(plain.t === 'int' ? plain.v.toString() : String(plain.v));
      return scalarJson(plain, () => path.join('.'), where);
    };
    const { sops: _drop, ...rest } = record;
    const out = walk(rest, []) as JsonObject;
    for (const k of Object.keys(record)) delete record[k];
    for (const [k, x] of Object.entries(out)) setKey(record, k, x);
    return [];
  } catch (e) {
    return [e as HoistError];
  }
}
