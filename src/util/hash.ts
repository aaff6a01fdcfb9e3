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
  let out = '{';
  for (const k of Object.keys(record).sort()) {
    const v = record[k];
    if (v === undefined || typeof v === 'function') continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
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
