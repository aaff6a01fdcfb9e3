import { createHash } from 'node:crypto';

/** JSON text of `value` with object keys sorted at every level; `undefined` members are omitted as JSON.stringify omits them. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    // undefined, functions and symbols have no JSON form; inside arrays JSON.stringify writes null
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined && typeof record[k] !== 'function')
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * The first `bytes` bytes of sha256, hex: a string of its own, where `sha256Hex(x).slice(...)`
 * would be a V8 sliced string keeping the whole 64-character digest alive for as long as it is held
 */
export function sha256HexPrefix(data: string | Buffer, bytes: number): string {
  return createHash('sha256').update(data).digest().toString('hex', 0, bytes);
}

/** sha256 of the canonical JSON of a value, hex */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
