import { hash } from 'node:crypto';

/** JSON text of `value` with object keys sorted at every level; `undefined` members are omitted as JSON.stringify omits them. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    // undefined, functions and symbols have no JSON form; inside arrays JSON.stringify writes null
    return text === undefined ? 'null' : text;
  }
  // string concatenation, not map/join: statuses are compared this way on every reconcile
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = sortedInPlace(Object.keys(record));
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = record[k];
    if (v === undefined || typeof v === 'function') continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/**
 * `keys` sorted by UTF-16 code units, as Array.prototype.sort sorts strings, in place: V8's sort
 * copies the array into a work array on every call, which for objects of a handful of keys (most
 * of a manifest) is most of what hashing allocates
 */
function sortedInPlace(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

/** sha256 of a string or bytes, hex (the one-shot crypto.hash: no Hash object per call) */
export function sha256Hex(data: string | Buffer): string {
  return hash('sha256', data, 'hex');
}

/**
 * The first `bytes` bytes of sha256, hex: a string of its own, where `sha256Hex(x).slice(...)`
 * would be a V8 sliced string keeping the whole 64-character digest alive for as long as it is held
 */
export function sha256HexPrefix(data: string | Buffer, bytes: number): string {
  return hash('sha256', data, 'buffer').toString('hex', 0, bytes);
}

/** sha256 of the canonical JSON of a value, hex */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
