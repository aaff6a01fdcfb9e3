/**
 * The NotificationProvider and NotificationRoute CustomResourceDefinitions as data, read from the
 * YAML files beside this module (the single source: `hoist run --install-crd`, the chart's
 * `crds/` copies and the tests use exactly those files).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import type { CustomResourceDefinition } from './crd.ts';
import { NOTIFICATION_PROVIDER_KIND, NOTIFICATION_ROUTE_KIND } from './notification-types.ts';
import { GROUP } from './types.ts';

export const NOTIFICATION_CRD_PATHS = [
  fileURLToPath(new URL('./notificationprovider-crd.yaml', import.meta.url)),
  fileURLToPath(new URL('./notificationroute-crd.yaml', import.meta.url)),
] as const;

let cached: string | undefined;

/** both CRDs, a fresh copy per call; throws when a file is not the CRD expected (a packaging bug) */
export function notificationCRDs(): CustomResourceDefinition[] {
  if (cached === undefined) {
    const docs = NOTIFICATION_CRD_PATHS.map((p) => load(readFileSync(p, 'utf8')) as CustomResourceDefinition);
    const kinds = docs.map((d) => (d.spec.group === GROUP && d.spec.scope === 'Namespaced' ? d.spec.names.kind : ''));
    if (kinds[0] !== NOTIFICATION_PROVIDER_KIND || kinds[1] !== NOTIFICATION_ROUTE_KIND)
      throw new Error(`${NOTIFICATION_CRD_PATHS.join(', ')}: not the notification CRDs`);
    cached = JSON.stringify(docs);
  }
  return JSON.parse(cached) as CustomResourceDefinition[];
}
