/**
 * The identity of a revision: a digest of the processed object set (DESIGN §3). Two renders that
 * produce the same objects get the same digest, whatever order the files or documents were in
 * and however the YAML was spelled; any change to any field of any object changes it.
 *
 * Canonical form: objects sorted by group, kind, namespace, name (ties broken by their canonical
 * text, so even duplicates order deterministically), each serialized as JSON with object keys
 * sorted recursively by UTF-16 code units, no whitespace; the list is a JSON array. The digest is
 * sha256 over the UTF-8 bytes of that array, spelled `sha256:<64 hex>`.
 *
 * Pure and synchronous.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/types.ts';
import { canonicalJson } from '../util/hash.ts';
import { groupOf } from './manifest.ts';

export { canonicalJson };

function sortKey(obj: KubeObject): [string, string, string, string] {
  return [groupOf(obj.apiVersion), obj.kind, obj.metadata.namespace ?? '', obj.metadata.name];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Entry {
  object: KubeObject;
  key: [string, string, string, string];
  text: string;
}

function canonicalEntries(objects: readonly KubeObject[]): Entry[] {
  const entries = objects.map((object) => ({ object, key: sortKey(object), text: canonicalJson(object) }));
  entries.sort((x, y) => {
    for (let i = 0; i < 4; i++) {
      const c = compare(x.key[i] as string, y.key[i] as string);
      if (c !== 0) return c;
    }
    return compare(x.text, y.text);
  });
  return entries;
}

/** The objects in canonical order (a new array; the objects themselves are not copied). */
export function canonicalOrder(objects: readonly KubeObject[]): KubeObject[] {
  return canonicalEntries(objects).map((e) => e.object);
}

/** `sha256:<hex>` of the canonical serialization of `objects`. */
export function contentDigest(objects: readonly KubeObject[]): string {
  const hash = createHash('sha256');
  hash.update('[');
  canonicalEntries(objects).forEach((e, i) => {
    if (i > 0) hash.update(',');
    hash.update(e.text);
  });
  hash.update(']');
  return `sha256:${hash.digest('hex')}`;
}
