/**
 * What `hoist render` and `hoist diff` print of a BundleDeployment with spec.decryption: objects
 * with every decrypted value blanked. A Secret's data and stringData values are shown as `***`
 * (kubectl diff masks Secrets the same way; in a diff, `*** (before)` / `*** (after)` where the
 * value changes), and any other string containing a decrypted value of 4 or more characters has
 * it replaced by <redacted>. The content digest printed is the real objects'.
 *
 * Pure: copies, never changes its arguments.
 */
import type { KubeObject } from '../kube/types.ts';
import { redact, redactionList } from '../util/redact.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const MASK = '***';

function isSecret(o: KubeObject | undefined): boolean {
  return o?.apiVersion === 'v1' && o.kind === 'Secret';
}

function blank(v: Json, secrets: readonly string[]): Json {
  if (typeof v === 'string') return redact(v, secrets);
  if (Array.isArray(v)) return v.map((x) => blank(x, secrets));
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, blank(x, secrets)]));
  return v;
}

/** the field's values masked; `other` (the other side of a diff) marks changed values */
function maskValues(values: unknown, other: unknown, side: 'before' | 'after' | undefined): Json {
  if (values === null || typeof values !== 'object' || Array.isArray(values)) return values as Json;
  const theirs = other !== null && typeof other === 'object' ? (other as Record<string, unknown>) : {};
  return Object.fromEntries(
    Object.entries(values as Record<string, unknown>).map(([k, v]) => {
      const changed = side !== undefined && k in theirs && theirs[k] !== v;
      return [k, changed ? `${MASK} (${side})` : MASK];
    }),
  );
}

/**
 * `obj` as it may be printed; `other`/`side`: the object it is diffed against and which side
 * this is, so a changed Secret value shows as changed.
 */
export function redactForDisplay(obj: KubeObject, sensitive: readonly string[], other?: KubeObject, side?: 'before' | 'after'): KubeObject {
  const secrets = redactionList(sensitive);
  const copy = blank(obj as unknown as Json, secrets) as unknown as KubeObject & Record<string, unknown>;
  if (isSecret(obj)) {
    const o = obj as unknown as Record<string, unknown>;
    const t = (other ?? {}) as Record<string, unknown>;
    for (const field of ['data', 'stringData']) if (field in o) copy[field] = maskValues(o[field], t[field], side);
  }
  return copy;
}
