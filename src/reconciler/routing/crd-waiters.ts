/**
 * Which BundleDeployments a CRD becoming Established wakes (crd-watch.ts reports it): those that
 * skipped optional objects, or whose revision is retrying or blocked (an unserved kind among the
 * likely causes), look again now rather than at the end of a backoff. Pure.
 */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { getCondition } from '../conditions.ts';

export function waitsForCrd(bd: BundleDeployment): boolean {
  const progressing = getCondition(bd.status?.conditions, 'Progressing')?.reason;
  return Boolean(bd.status?.skippedOptional?.length) || progressing === 'Retrying' || progressing === 'Blocked';
}
