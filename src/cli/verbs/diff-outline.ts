/**
 * The order `hoist diff` announces: the apply phases of the rendered objects (src/apply/phases.ts,
 * the applier's own planning) and the Helm hooks the controller would run for this change, in
 * the order it runs them (src/apply/hooks.ts). Pure: text from plain data.
 */
import type { HookEvent } from '../../../api/v1alpha2/types.ts';
import { hooksFor } from '../../apply/hooks.ts';
import { planSteps } from '../../apply/phases.ts';
import { describeObject, type KubeObject } from '../../kube/types.ts';
import { hookDeletePolicies, hookWeight } from '../../processors/helm/hooks.ts';

/** install: nothing installed yet; upgrade: a new revision of an installed BundleDeployment */
export function outline(objects: readonly KubeObject[], hooks: readonly KubeObject[], action: 'install' | 'upgrade'): string {
  const { steps } = planSteps(objects, (o) => o);
  const lines = ['apply phases (a new revision applies each once the ones before it are ready):'];
  steps.forEach((s, i) => lines.push(`  ${i + 1}. ${s.name}: ${s.items.length} object${s.items.length === 1 ? '' : 's'}`));
  const events: HookEvent[] = action === 'install' ? ['pre-install', 'post-install'] : ['pre-upgrade', 'post-upgrade'];
  const running = events.flatMap((e) => hooksFor(hooks, e).map((h) => `  ${e}: ${describeObject(h)} (weight ${hookWeight(h)}, delete policy ${hookDeletePolicies(h).join(',')})`));
  if (hooks.length > 0) lines.push(running.length > 0 ? `helm hooks that would run (${events.join(', then the phases, then ')}):` : `helm hooks: none for ${action}`, ...running);
  return `${lines.join('\n')}\n`;
}
