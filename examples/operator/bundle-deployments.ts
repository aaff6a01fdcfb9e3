/**
 * The BundleDeployment an Operator wants for a version: the template's spec, the source with
 * `{version}` filled in, the Operator's lineage and labels (a shard label such as
 * core.rukpak.io/shard picks the Hoist controller that reconciles them). Pure.
 *
 * Names are `<operator>-<sequence>` with a zero-padded sequence: Hoist's lineage arbitration
 * (DESIGN §4) lets the newest unpaused member apply, newest by creationTimestamp (seconds) and
 * then by name, so two BundleDeployments created within one second must still sort in creation
 * order.
 */
import { API_VERSION, KIND, LABEL_LINEAGE, type BundleDeployment, type SourceSpec } from '../../api/v1alpha2/types.ts';
import { LABEL_OPERATOR, LABEL_SEQUENCE, LABEL_VERSION, OP_API_VERSION, OP_KIND, type Operator } from './types.ts';

export const bdName = (op: string, sequence: number): string => `${op}-${String(sequence).padStart(5, '0')}`;

/** every string in `v` with {version} replaced */
function fill<T>(v: T, version: string): T {
  if (typeof v === 'string') return v.replaceAll('{version}', version) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => fill(x, version)) as T;
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, version)])) as T;
  return v;
}

export function desiredBundleDeployment(op: Operator, sequence: number): BundleDeployment {
  const version = op.spec.version;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: bdName(op.metadata.name, sequence),
      labels: {
        ...op.metadata.labels,
        [LABEL_LINEAGE]: op.metadata.name,
        [LABEL_OPERATOR]: op.metadata.name,
        [LABEL_VERSION]: version,
        [LABEL_SEQUENCE]: String(sequence),
      },
      ...(op.metadata.uid ? { ownerReferences: [{ apiVersion: OP_API_VERSION, kind: OP_KIND, name: op.metadata.name, uid: op.metadata.uid }] } : {}),
    },
    spec: { ...op.spec.template, sources: [fill<SourceSpec>(op.spec.source, version)], ...(op.spec.paused ? { paused: true } : {}) },
  } as BundleDeployment;
}

export const sequenceOf = (bd: BundleDeployment): number => Number(bd.metadata.labels?.[LABEL_SEQUENCE] ?? 0);
export const versionOf = (bd: BundleDeployment): string | undefined => bd.metadata.labels?.[LABEL_VERSION];
