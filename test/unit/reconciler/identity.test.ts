import { describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { serviceAccountOf } from '../../../src/reconciler/identity.ts';
import { HoistError } from '../../../src/util/errors.ts';

const bd = (spec: Partial<BundleDeployment['spec']>): BundleDeployment =>
  ({ metadata: { name: 'app' }, spec: { format: 'plain', sources: [], ...spec } }) as unknown as BundleDeployment;

describe('serviceAccountOf', () => {
  it('the controller acts when neither the BD nor the controller names an account', () => {
    expect(serviceAccountOf(bd({ installNamespace: 'team-a' }))).toBeUndefined();
  });

  it('spec.serviceAccount wins over the default, in installNamespace', () => {
    expect(serviceAccountOf(bd({ installNamespace: 'team-a', serviceAccount: { name: 'installer' } }), 'hoist-default')).toEqual({
      namespace: 'team-a',
      name: 'installer',
    });
    expect(serviceAccountOf(bd({ installNamespace: 'team-a' }), 'hoist-default')).toEqual({ namespace: 'team-a', name: 'hoist-default' });
  });

  it('the default account without installNamespace is a terminal spec error naming the flag', () => {
    let err: unknown;
    try {
      serviceAccountOf(bd({}), 'hoist-default');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HoistError);
    expect(err).toMatchObject({ stage: 'spec', terminal: true });
    expect((err as Error).message).toContain('--default-service-account hoist-default');
  });
});
