/**
 * Names OLM v1 generates, reproduced bit for bit so that objects installed by OLM v1 and by Hoist
 * carry the same names (and a migration between them updates objects in place):
 *
 * - rukpak util.ObjectNameForBaseAndSuffix: "<base>-<suffix>", the base cut so the name fits 63.
 * - render.DefaultUniqueNameGenerator: ObjectNameForBaseAndSuffix(base, hash) where hash is
 *   base36(sha224(json.Encoder(permission))) — Go's encoding/json of the CSV's
 *   StrategyDeploymentPermissions struct (field order serviceAccountName, rules; PolicyRule
 *   fields verbs, apiGroups, resources, resourceNames, nonResourceURLs, all but verbs omitempty;
 *   HTML-escaped strings; a trailing newline).
 *
 * Pure.
 */
import { createHash } from 'node:crypto';
import type { PolicyRule, StrategyPermissions } from './csv.ts';

const MAX_NAME_LENGTH = 63;

export function objectNameForBaseAndSuffix(base: string, suffix: string): string {
  let b = base;
  if (b.length + suffix.length > MAX_NAME_LENGTH) b = b.slice(0, MAX_NAME_LENGTH - suffix.length - 1);
  return `${b}-${suffix}`;
}

/** A JSON string as Go's encoding/json writes it (escapes <, >, &, U+2028, U+2029; lone surrogates become U+FFFD). */
function goJsonString(s: string): string {
  return JSON.stringify(s)
    .replace(/\\u(d[89ab][0-9a-f]{2}|d[c-f][0-9a-f]{2})/g, '\\ufffd')
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

function goStringSlice(list: string[] | null): string {
  return list === null ? 'null' : `[${list.map(goJsonString).join(',')}]`;
}

function goPolicyRule(rule: PolicyRule): string {
  const parts = [`"verbs":${goStringSlice(rule.verbs)}`];
  for (const key of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'] as const) {
    const list = rule[key];
    if (list !== undefined && list.length > 0) parts.push(`"${key}":${goStringSlice(list)}`);
  }
  return `{${parts.join(',')}}`;
}

/** What json.NewEncoder(w).Encode(permission) writes for a StrategyDeploymentPermissions. */
function goJsonPermissions(p: StrategyPermissions): string {
  const rules = p.rules === null ? 'null' : `[${p.rules.map(goPolicyRule).join(',')}]`;
  return `{"serviceAccountName":${goJsonString(p.serviceAccountName)},"rules":${rules}}\n`;
}

/** hash.DeepHashObject: base36 of the sha224 of the Go JSON encoding (math/big Text(36), no leading zeros). */
function deepHashPermissions(p: StrategyPermissions): string {
  const digest = createHash('sha224').update(goJsonPermissions(p), 'utf8').digest('hex');
  return BigInt(`0x${digest}`).toString(36);
}

/** render.DefaultUniqueNameGenerator for a permission. */
export function uniqueNameForPermissions(base: string, p: StrategyPermissions): string {
  return objectNameForBaseAndSuffix(base, deepHashPermissions(p));
}
