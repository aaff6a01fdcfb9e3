import { describe, expect, it } from 'vitest';
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../../api/v1alpha2/types.ts';
import { decideTakeOver } from '../../../src/apply/collision.ts';

const other = { labels: { [LABEL_OWNER_NAME]: 'theirs', [LABEL_LINEAGE]: 'their-lineage' } };
const me = { name: 'mine', lineage: 'my-lineage', protection: 'None' as const };

describe('decideTakeOver', () => {
  it('None takes another lineage’s ordinary object', () => {
    expect(decideTakeOver(other, me)).toEqual({ action: 'steal', owner: 'BundleDeployment theirs (lineage their-lineage)' });
  });

  it('None never takes another lineage’s CRD, and names its owner', () => {
    const d = decideTakeOver(other, me, { crd: true });
    expect(d.action).toBe('refuse');
    expect(d).toMatchObject({ owner: 'BundleDeployment theirs (lineage their-lineage)' });
    expect((d as { why: string }).why).toMatch(/never taken over.*collisionProtection None/);
  });

  it('None still adopts an unowned CRD and updates its own lineage’s', () => {
    expect(decideTakeOver({ labels: {} }, me, { crd: true })).toEqual({ action: 'adopt' });
    expect(decideTakeOver({ labels: { [LABEL_OWNER_NAME]: 'older', [LABEL_LINEAGE]: 'my-lineage' } }, me, { crd: true })).toEqual({ action: 'update', handover: true });
  });
});
