/**
 * SOPS decryption as `sops -d` does it (getsops/sops: stores/metadata.go, sops.go Tree.Decrypt,
 * aes/cipher.go, cmd/sops/common DecryptTree), for files encrypted with age:
 *
 * 1. the `sops` metadata of the first document (and the key removed from every document); more
 *    than one of the encryption rules is refused, none means `unencrypted_suffix: _unencrypted`;
 * 2. the 32-byte data key, from the first `sops.age[].enc` entry one of the identities opens;
 * 3. every value whose path (the map keys from the root) the rules say is encrypted is
 *    AES-256-GCM-decrypted (`ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`, the path joined by ":"
 *    with a trailing ":" as the additional data) and typed by its `type`;
 * 4. the MAC — SHA-512 over every value as Go prints it (sops.ToBytes), in document order, or
 *    only over the encrypted ones with `mac_only_encrypted` — must equal the file's `sops.mac`,
 *    itself decrypted with the file's lastmodified as additional data. A file changed after
 *    encryption (a value edited, moved, removed or added) is refused.
 *
 * Not supported, refused naming what: key groups with Shamir's secret sharing (more than one
 * key group), PGP and cloud KMS keys (only age keys are read), and files choosing what to encrypt
 * by comments (`encrypted_comment_regex`, `unencrypted_comment_regex`).
 *
 * The result is what reading `sops -d`'s output gives (docs/security.md, "SOPS decryption"):
 * JSON values per document, the YAML store's `<<` keys merged as go-yaml v2 merges the plain
 * `<<:` go-yaml v3 prints. Pure but for the CPU of the decryption; messages never carry a
 * decrypted value or a key.
 */
import { createDecipheriv, createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Re2Js from 're2js';
import { isHoistError } from '../../util/errors.ts';
import { ProcessCode, processError } from '../errors.ts';
import { isJsonObject, setKey, type JsonObject, type JsonValue } from '../yaml/values.ts';
import { unwrapDataKey, type DecryptionKeys } from './age-keys.ts';
import { formatGoFloatF, formatRFC3339, formatRFC3339Nano, parseRFC3339 } from './go-format.ts';
import type { SopsFile, SopsMap, SopsScalar, SopsValue } from './sops-tree.ts';

const require = createRequire(import.meta.url);
const re2 = (): typeof Re2Js.RE2JS => (require('re2js') as typeof Re2Js).RE2JS;

/** sops.DefaultUnencryptedSuffix */
const DEFAULT_UNENCRYPTED_SUFFIX = '_unencrypted';
/** sops.MACOnlyEncryptedInitialization: sha256("sops") */
const MAC_ONLY_ENCRYPTED_INIT = createHash('sha256').update('sops').digest();
/** age entries tried per file at most (each costs an X25519 or ML-KEM operation) */
export const MAX_AGE_ENTRIES = 64;

/** the rule of a file that decides which values are encrypted (at most one is set) */
interface Rules {
  unencryptedSuffix?: string;
  encryptedSuffix?: string;
  unencryptedRegex?: Re2Js.RE2JS;
  encryptedRegex?: Re2Js.RE2JS;
}

interface Metadata {
  age: Array<{ recipient: string; enc: string }>;
  /** key types other than age the file is encrypted for (named in errors) */
  others: string[];
  lastModified: string;
  mac: string;
  macOnlyEncrypted: boolean;
  rules: Rules;
}

export interface DecryptedFile {
  /** each document as reading `sops -d`'s output gives it */
  documents: JsonValue[];
  /** the decrypted values' texts (strings, numbers, times), for callers that must keep them out of what they print */
  sensitive: string[];
  /** the file's encrypted MAC: names this file (each encryption makes a new one) */
  mac: string;
  /** decrypts values of objects rendered from this file (kustomize): `ENC[...]` at `path` */
  decryptValue(value: string, path: readonly string[]): SopsScalar;
  /** whether the file's rules encrypt the value at `path` */
  isEncrypted(path: readonly string[]): boolean;
}

function fail(message: string, subject: string, code: ProcessCode = ProcessCode.DecryptFailed): never {
  throw processError(`sops: ${message}`, code, subject);
}

/** whether a document holds SOPS metadata: a top-level `sops` mapping with a `mac` */
export function hasSopsMetadata(branch: SopsMap): boolean {
  const meta = branch.items.find(([k]) => k === 'sops')?.[1];
  return meta?.t === 'map' && meta.items.some(([k]) => k === 'mac');
}

// ---------------------------------------------------------------------------------------------
// metadata (stores/stores.go metadata, read with mapstructure's weak typing)

function weakString(v: SopsValue | undefined, field: string, subject: string): string {
  if (v === undefined || v.t === 'null') return '';
  if (v.t === 'map' || v.t === 'list') fail(`sops.${field} is a ${v.t === 'map' ? 'map' : 'list'}, not a string`, subject);
  // mapstructure prints a bool as 1 or 0; every other scalar as Go prints it
  if (v.t === 'bool') return v.v ? '1' : '0';
  return macBytes(v);
}

function weakBool(v: SopsValue | undefined, field: string, subject: string): boolean {
  if (v === undefined || v.t === 'null') return false;
  if (v.t === 'bool') return v.v;
  if (v.t === 'int') return v.v !== 0n;
  if (v.t === 'float') return v.v !== 0;
  if (v.t === 'str') {
    if (v.v === '') return false;
    if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v.v)) return true;
    if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v.v)) return false;
  }
  fail(`sops.${field} is not a boolean`, subject);
}

function field(m: SopsMap, key: string): SopsValue | undefined {
  return m.items.find(([k]) => k === key)?.[1];
}

const OTHER_KEY_TYPES = ['pgp', 'kms', 'gcp_kms', 'azure_kv', 'hc_vault', 'hckms'] as const;

function ageEntries(group: SopsMap, where: string, subject: string): Array<{ recipient: string; enc: string }> {
  const list = field(group, 'age');
  if (list === undefined || list.t === 'null') return [];
  if (list.t !== 'list') fail(`${where}age is not a list`, subject);
  return list.items.map((e, i) => {
    if (e.t !== 'map') fail(`${where}age[${i}] is not a map`, subject);
    return {
      recipient: weakString(field(e, 'recipient'), `${where}age[${i}].recipient`, subject),
      enc: weakString(field(e, 'enc'), `${where}age[${i}].enc`, subject),
    };
  });
}

function othersOf(group: SopsMap): string[] {
  return OTHER_KEY_TYPES.filter((k) => {
    const v = field(group, k);
    return v !== undefined && v.t === 'list' && v.items.length > 0;
  });
}

function compileRule(pattern: string, name: string, subject: string): Re2Js.RE2JS {
  try {
    return re2().compile(pattern);
  } catch {
    fail(`sops.${name} is not a valid regular expression (Go RE2 syntax)`, subject);
  }
}

function readMetadata(meta: SopsMap, subject: string): Metadata {
  const str = (k: string): string => weakString(field(meta, k), k, subject);
  const rules = [
    'unencrypted_suffix',
    'encrypted_suffix',
    'unencrypted_regex',
    'encrypted_regex',
    'unencrypted_comment_regex',
    'encrypted_comment_regex',
  ].filter((k) => str(k) !== '');
  if (rules.length > 1)
    fail(
      'cannot use more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, or unencrypted_comment_regex in the same file',
      subject,
    );
  if (rules[0]?.endsWith('_comment_regex'))
    fail(`sops.${rules[0]}: files that choose what to encrypt by comments are not supported by Hoist (use encrypted_regex or a suffix rule)`, subject);
  const r: Rules = {};
  if (rules.length === 0) r.unencryptedSuffix = DEFAULT_UNENCRYPTED_SUFFIX;
  else if (rules[0] === 'unencrypted_suffix') r.unencryptedSuffix = str('unencrypted_suffix');
  else if (rules[0] === 'encrypted_suffix') r.encryptedSuffix = str('encrypted_suffix');
  else if (rules[0] === 'unencrypted_regex') r.unencryptedRegex = compileRule(str('unencrypted_regex'), 'unencrypted_regex', subject);
  else r.encryptedRegex = compileRule(str('encrypted_regex'), 'encrypted_regex', subject);

  // internalKeygroups: the top-level key lists form one group; else each of key_groups is one
  let age = ageEntries(meta, '', subject);
  let others = othersOf(meta);
  if (age.length === 0 && others.length === 0) {
    const groups = field(meta, 'key_groups');
    const list = groups?.t === 'list' ? groups.items : [];
    if (list.length === 0) fail('no keys found in file', subject);
    if (list.length > 1) fail(`the data key is split over ${list.length} key groups (Shamir's secret sharing), which Hoist does not support`, subject);
    const group = list[0]!;
    if (group.t !== 'map') fail('sops.key_groups[0] is not a map', subject);
    age = ageEntries(group, 'key_groups[0].', subject);
    others = othersOf(group);
  }
  return {
    age,
    others,
    lastModified: str('lastmodified'),
    mac: str('mac'),
    macOnlyEncrypted: weakBool(field(meta, 'mac_only_encrypted'), 'mac_only_encrypted', subject),
    rules: r,
  };
}

/** Tree.shouldBeEncrypted without the comment rules */
function shouldBeEncrypted(rules: Rules, path: readonly string[]): boolean {
  let encrypted = true;
  if (rules.unencryptedSuffix) if (path.some((p) => p.endsWith(rules.unencryptedSuffix!))) encrypted = false;
  if (rules.encryptedSuffix) encrypted = path.some((p) => p.endsWith(rules.encryptedSuffix!));
  if (rules.unencryptedRegex) if (path.some((p) => rules.unencryptedRegex!.matcher(p).find())) encrypted = false;
  if (rules.encryptedRegex) encrypted = path.some((p) => rules.encryptedRegex!.matcher(p).find());
  return encrypted;
}

// ---------------------------------------------------------------------------------------------
// values (aes/cipher.go)

const ENC = /^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** base64.StdEncoding.DecodeString: padded, strict, line breaks ignored */
function goBase64(s: string): Buffer | undefined {
  const compact = s.replace(/[\r\n]/g, '');
  return BASE64.test(compact) ? Buffer.from(compact, 'base64') : undefined;
}

/** Cipher.Decrypt: the value `ciphertext` at `aad`, typed; throws an Error without the value */
function decryptAes(ciphertext: string, key: Uint8Array, aad: string): SopsScalar | { t: 'comment' } {
  if (ciphertext === '') return { t: 'str', v: '' };
  const m = ENC.exec(ciphertext);
  if (!m) throw new Error('is not encrypted (not in sops ENC[AES256_GCM,...] form)');
  const [data, iv, tag] = [goBase64(m[1]!), goBase64(m[2]!), goBase64(m[3]!)];
  if (!data || !iv || !tag) throw new Error('has malformed base64 in its ENC[...] form');
  if (iv.length === 0) throw new Error('has an empty iv');
  if (tag.length !== 16) throw new Error('has a tag that is not 16 bytes');
  let plain: Buffer;
  try {
    const d = createDecipheriv('aes-256-gcm', key, iv);
    d.setAAD(Buffer.from(aad, 'utf8'));
    d.setAuthTag(tag);
    plain = Buffer.concat([d.update(data), d.final()]);
  } catch {
    throw new Error('does not decrypt with the data key (tampered, moved to another key, or encrypted with another data key)');
  }
  const text = plain.toString('utf8');
  switch (m[4]) {
    case 'str':
      return { t: 'str', v: text };
    case 'bytes':
      if (!Buffer.from(text, 'utf8').equals(plain)) throw new Error('holds bytes that are not UTF-8 text, which a manifest cannot hold');
      return { t: 'str', v: text };
    case 'int': {
      // strconv.Atoi
      if (!/^[+-]?[0-9]+$/.test(text)) throw new Error('is typed int but does not hold an integer');
      const v = BigInt(text);
      if (v < -(2n ** 63n) || v > 2n ** 63n - 1n) throw new Error('is typed int but is out of the int64 range');
      return { t: 'int', v };
    }
    case 'float': {
      // strconv.ParseFloat, which also reads inf and nan (refused later: JSON cannot hold them)
      if (/^[+-]?(inf|infinity)$/i.test(text)) return { t: 'float', v: text.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY };
      if (/^nan$/i.test(text)) return { t: 'float', v: Number.NaN };
      if (!/^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text)) throw new Error('is typed float but does not hold a number');
      const v = Number(text);
      if (!Number.isFinite(v)) throw new Error('is typed float but is out of the float64 range');
      return { t: 'float', v };
    }
    case 'bool':
      if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return { t: 'bool', v: true };
      if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return { t: 'bool', v: false };
      throw new Error('is typed bool but does not hold a boolean');
    case 'time': {
      const t = parseRFC3339(text);
      if (!t) throw new Error('is typed time but does not hold an RFC 3339 time');
      return { t: 'time', v: formatRFC3339Nano(t) };
    }
    case 'comment':
      return { t: 'comment' };
    default:
      throw new Error('has an unknown datatype');
  }
}

/** sops.ToBytes, as a string (every type it prints is text) */
function macBytes(v: SopsScalar): string {
  switch (v.t) {
    case 'str':
    case 'time':
      return v.v;
    case 'int':
      return v.v.toString();
    case 'float':
      return formatGoFloatF(v.v);
    case 'bool':
      return v.v ? 'True' : 'False';
    case 'null':
      return '';
  }
}

/** a path for messages: keys joined by ".", never a value */
const pathText = (path: readonly string[]): string => (path.length ? path.join('.') : '(top level)');

// ---------------------------------------------------------------------------------------------

/**
 * Decrypts one SOPS file with `keys` (spec.decryption's age identities). Throws a terminal
 * HoistError, stage process, subject `subject` (the file): code decryption-key-missing when no
 * identity opens the data key (naming the recipients tried and the ones the file is for),
 * mac-mismatch for a tampered file, decrypt-failed for anything else sops would refuse.
 */
export async function decryptSopsFile(file: SopsFile, subject: string, keys: DecryptionKeys | undefined): Promise<DecryptedFile> {
  const [first] = file.branches;
  const metaItem = first?.items.find(([k]) => k === 'sops');
  if (!first || !metaItem) fail('sops metadata not found', subject);
  if (metaItem[1].t !== 'map') fail('found a sops entry that is not a mapping', subject);
  if (first.items.filter(([k]) => k === 'sops').length > 1) fail('found duplicate sops entry', subject);
  const meta = readMetadata(metaItem[1], subject);
  const branches = file.branches.map((b): SopsMap => ({ t: 'map', items: b.items.filter(([k]) => k !== 'sops') }));

  const lastModified = parseRFC3339(meta.lastModified);
  if (!lastModified) fail('sops.lastmodified is not an RFC 3339 time', subject);
  const key = await dataKey(meta, subject, keys);

  const sensitive = new Set<string>();
  const hash = createHash('sha512');
  if (meta.macOnlyEncrypted) hash.update(MAC_ONLY_ENCRYPTED_INIT);
  /** a leaf decrypted (when the rules say so) and hashed; a list item typed comment is none */
  const leaf = (v: SopsScalar, path: string[], inList: boolean): SopsScalar | undefined => {
    const encrypted = shouldBeEncrypted(meta.rules, path);
    let out: SopsScalar = v;
    if (encrypted) {
      if (v.t !== 'str')
        fail(
          `the value at ${pathText(path)} should be encrypted but is a ${v.t === 'time' ? 'timestamp' : v.t === 'int' || v.t === 'float' ? 'number' : v.t}`,
          subject,
        );
      const d = decryptValueAt(v.v, key, path, subject);
      // sops 3.13.3 turns a list item typed comment into a comment: not hashed, not printed
      if (d.t === 'comment') {
        if (inList) return undefined;
        fail(`the value at ${pathText(path)} is typed comment`, subject);
      }
      out = d;
      if (d.t !== 'bool' && d.t !== 'null') sensitive.add(macBytes(d));
    }
    if (!meta.macOnlyEncrypted || encrypted) hash.update(macBytes(out), 'utf8');
    return out;
  };
  const walk = (v: SopsValue, path: string[], inList = false): SopsValue | undefined => {
    switch (v.t) {
      case 'map':
        return { t: 'map', items: v.items.map(([k, x]) => [k, walk(x, [...path, k])!]) };
      case 'list':
        return { t: 'list', items: v.items.flatMap((x) => walk(x, path, true) ?? []) };
      case 'null':
        // a nil value is neither decrypted nor hashed (walkValue returns it as it is)
        return v;
      default:
        return leaf(v, path, inList);
    }
  };
  const decrypted = branches.map((b) => walk(b, []) as SopsMap);

  // DecryptTree: the stored MAC, decrypted with lastmodified as additional data, must be ours
  const computed = hash.digest('hex').toUpperCase();
  let stored: SopsScalar | { t: 'comment' };
  try {
    stored = decryptAes(meta.mac, key, formatRFC3339(lastModified));
  } catch (e) {
    fail(`cannot decrypt the MAC: it ${(e as Error).message}`, subject, ProcessCode.MacMismatch);
  }
  if (stored.t !== 'str' || stored.v !== computed)
    fail(
      stored.t === 'str' && stored.v === ''
        ? 'the file has no MAC'
        : 'MAC mismatch: the file was changed after it was encrypted (a value edited, added, removed or moved); re-encrypt it with sops',
      subject,
      ProcessCode.MacMismatch,
    );

  return {
    documents: decrypted.map((b) => toJson(b, file.format, subject)),
    sensitive: [...sensitive],
    mac: meta.mac,
    decryptValue: (value, path) => {
      const d = decryptValueAt(value, key, path, subject);
      if (d.t === 'comment') fail(`the value at ${pathText(path)} is typed comment`, subject);
      return d;
    },
    isEncrypted: (path) => shouldBeEncrypted(meta.rules, path),
  };
}

function decryptValueAt(value: string, key: Uint8Array, path: readonly string[], subject: string): SopsScalar | { t: 'comment' } {
  try {
    return decryptAes(value, key, `${path.join(':')}:`);
  } catch (e) {
    fail(`the value at ${pathText(path)} ${(e as Error).message}`, subject);
  }
}

/** GetDataKeyWithKeyServices for one key group of age keys */
async function dataKey(meta: Metadata, subject: string, keys: DecryptionKeys | undefined): Promise<Uint8Array> {
  const forWhom = meta.age.length ? `age ${meta.age.map((a) => a.recipient).join(', ')}` : meta.others.join(', ');
  if (meta.age.length === 0) fail(`the file is encrypted for ${forWhom} only: Hoist decrypts with age keys`, subject, ProcessCode.DecryptionKeyMissing);
  if (!keys || keys.identities.length === 0)
    fail(
      `the file is SOPS-encrypted (for ${forWhom}) and ${keys ? `${keys.from} holds no age identity (*.agekey)` : 'spec.decryption is not set'}`,
      subject,
      ProcessCode.DecryptionKeyMissing,
    );
  if (meta.age.length > MAX_AGE_ENTRIES) fail(`the file has ${meta.age.length} age entries, more than the ${MAX_AGE_ENTRIES} Hoist tries`, subject);
  const problems: string[] = [];
  for (const entry of meta.age) {
    try {
      const key = await unwrapDataKey(entry.enc, keys.identities);
      if (key === undefined) continue;
      if (key.length !== 32) fail(`the data key is ${key.length} bytes, not the 32 of AES-256`, subject);
      return key;
    } catch (e) {
      if (isHoistError(e) || !(e instanceof Error)) throw e;
      problems.push(`${entry.recipient}: ${e.message}`);
    }
  }
  const tried = keys.identities.map((i) => i.recipient).join(', ');
  fail(
    `no age identity of ${keys.from} (${tried}) can decrypt the data key: the file is encrypted for ${forWhom}${problems.length ? `; ${problems.join('; ')}` : ''}`,
    subject,
    ProcessCode.DecryptionKeyMissing,
  );
}

// ---------------------------------------------------------------------------------------------
// output: what reading `sops -d`'s output gives

/** one decrypted scalar as JSON; refuses what JSON cannot hold, without printing the value */
export function scalarJson(v: SopsScalar, where: () => string, subject: string): JsonValue {
  switch (v.t) {
    case 'str':
    case 'time':
      return v.v;
    case 'bool':
      return v.v;
    case 'null':
      return null;
    case 'int': {
      const n = Number(v.v);
      if (!Number.isSafeInteger(n)) fail(`the integer at ${where()} cannot be represented exactly (beyond ±2^53)`, subject);
      return n;
    }
    case 'float':
      if (!Number.isFinite(v.v)) fail(`the value at ${where()} is infinite or not a number, which JSON cannot hold`, subject);
      return v.v;
  }
}

function toJson(branch: SopsMap, format: SopsFile['format'], subject: string): JsonValue {
  const conv = (v: SopsValue, path: string[]): JsonValue => {
    if (v.t === 'list') return v.items.map((x) => conv(x, path));
    if (v.t !== 'map') return scalarJson(v, () => pathText(path), subject);
    const out: JsonObject = {};
    const merged: JsonObject[] = [];
    for (const [k, x] of v.items) {
      // go-yaml v3 prints a "<<" key plain, and the v2 reader of the manifest merges it
      if (format === 'yaml' && k === '<<') {
        const sources = x.t === 'list' ? x.items : [x];
        for (const s of sources) {
          const j = conv(s, [...path, k]);
          if (!isJsonObject(j)) fail(`the value at ${pathText([...path, k])}: map merge requires a map or a sequence of maps`, subject);
          merged.push(j);
        }
        continue;
      }
      setKey(out, k, conv(x, [...path, k]));
    }
    if (merged.length === 0) return out;
    // explicit keys win over merged ones, earlier merge sources over later ones (as the manifest reader merges)
    const result: JsonObject = {};
    for (let i = merged.length - 1; i >= 0; i--) for (const [k, x] of Object.entries(merged[i]!)) setKey(result, k, x);
    for (const [k, x] of Object.entries(out)) setKey(result, k, x);
    return result;
  };
  return conv(branch, []);
}
