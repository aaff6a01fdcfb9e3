import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOTIFICATION_CRD_PATHS, notificationCRDs } from '../../../api/v1alpha2/notification-crds.ts';
import { NOTIFICATION_EVENTS, PROVIDER_TYPES } from '../../../api/v1alpha2/notification-types.ts';

const CHART_CRDS = new URL('../../../charts/hoist/crds/', import.meta.url).pathname;

describe('notification CRDs', () => {
  it('the chart ships the same files byte for byte', () => {
    for (const p of NOTIFICATION_CRD_PATHS) expect(readFileSync(join(CHART_CRDS, basename(p)), 'utf8')).toBe(readFileSync(p, 'utf8'));
  });
  it('are namespaced and list the types and events the code knows', () => {
    const [provider, route] = notificationCRDs();
    expect([provider!.spec.scope, route!.spec.scope]).toEqual(['Namespaced', 'Namespaced']);
    const spec = (crd: typeof provider) => crd!.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!;
    expect(spec(provider).type!.enum).toEqual([...PROVIDER_TYPES]);
    expect(spec(route).events!.items!.enum).toEqual([...NOTIFICATION_EVENTS]);
  });
});
