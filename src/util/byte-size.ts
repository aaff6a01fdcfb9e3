/**
 * Byte sizes as Kubernetes quantities write them: a plain number of bytes, or a number with a
 * binary (Ki, Mi, Gi, Ti) or decimal (k, M, G, T) suffix — "1536Mi", "2G", "500000000".
 * Pure. Throws an Error naming the flag on anything else.
 */
const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

export function parseByteSize(text: string, what = 'size'): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(text.trim());
  const bytes = m ? Math.floor(Number(m[1]) * (UNITS[m[2] ?? ''] ?? Number.NaN)) : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new Error(`${what} ${JSON.stringify(text)} is not a size such as 1536Mi, 2Gi or 500M`);
  return bytes;
}
