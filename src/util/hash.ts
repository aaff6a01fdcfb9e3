import { createHash } from 'node:crypto';

/** JSON with object keys sorted recursively: equal values always serialize the same way. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v as Record<string, unknown>).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    }
    return v;
  });
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** sha256 of the canonical JSON of a value, hex */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
