/**
 * What the reconciler keeps out of status, Events and its log for a BundleDeployment with
 * spec.decryption: the values a render decrypted from SOPS-encrypted files (known in memory after
 * a render in this process), and the values of the revision's Secrets (data decoded and as
 * written, stringData), which also covers a revision reused from the store after a restart. An
 * API server or health message quoting one of them (`Invalid value: "…"`) shows <redacted>.
 *
 * Pure.
 */
import type { KubeObject } from '../kube/types.ts';
import { redact, redactionList } from '../util/redact.ts';
import type { Condition } from '../../api/v1alpha2/types.ts';
import type { EventRecorder } from './events.ts';

/** the strings to blank for a revision: its decrypted values and its Secrets' values */
export function revisionRedactions(r: { objects: readonly KubeObject[]; hooks: readonly KubeObject[]; sensitive?: readonly string[] }): string[] {
  const strings: string[] = [...(r.sensitive ?? [])];
  for (const o of [...r.objects, ...r.hooks]) {
    if (o.apiVersion !== 'v1' || o.kind !== 'Secret') continue;
    const { data, stringData } = o as KubeObject & { data?: Record<string, unknown>; stringData?: Record<string, unknown> };
    for (const v of Object.values(data ?? {})) {
      if (typeof v !== 'string') continue;
      strings.push(v, Buffer.from(v, 'base64').toString('utf8'));
    }
    for (const v of Object.values(stringData ?? {})) if (typeof v === 'string') strings.push(v);
  }
  return redactionList(strings);
}

/** conditions with their messages redacted (a copy only when something changed) */
export function redactConditions(conditions: Condition[] | undefined, secrets: readonly string[] | undefined): Condition[] | undefined {
  if (!conditions || !secrets?.length) return conditions;
  return conditions.map((c) => {
    const message = redact(c.message, secrets);
    return message === c.message ? c : { ...c, message };
  });
}

/** an EventRecorder whose messages are redacted with the BundleDeployment's strings */
export function redactingEvents(events: EventRecorder, secretsOf: (bd: string) => readonly string[] | undefined): EventRecorder {
  return {
    event(bd, type, reason, message) {
      const secrets = secretsOf(bd.metadata.name);
      events.event(bd, type, reason, secrets?.length ? redact(message, secrets) : message);
    },
  };
}
