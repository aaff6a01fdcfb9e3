/**
 * The order `hoist diff` announces: the apply phases of the rendered objects and the Helm hooks
 * the controller would run for this change, in the order it runs them — both as the preview
 * (src/apply/preview.ts) planned them. Pure: text from plain data.
 */
import type { RevisionPreview } from '../../apply/preview.ts';
import { describeObject } from '../../kube/types.ts';
import { hookDeletePolicies, hookWeight } from '../../processors/helm/hooks.ts';

export function outline(preview: Pick<RevisionPreview, 'steps' | 'hooks' | 'hasHooks' | 'isNew'>): string {
  const lines = ['apply phases (a new revision applies each once the ones before it are ready):'];
  preview.steps.forEach((s, i) => lines.push(`  ${i + 1}. ${s.name}: ${s.items.length} object${s.items.length === 1 ? '' : 's'}`));
  const events = preview.hooks.map((h) => h.event);
  const running = preview.hooks.flatMap(({ event, hooks }) =>
    hooks.map((h) => `  ${event}: ${describeObject(h)} (weight ${hookWeight(h)}, delete policy ${hookDeletePolicies(h).join(',')})`),
  );
  if (preview.hasHooks) {
    if (running.length > 0) lines.push(`helm hooks that would run (${events.join(', then the phases, then ')}):`, ...running);
    else
      lines.push(
        preview.isNew
          ? `helm hooks: none for ${events
              .map((e) => e.replace(/^(pre|post)-/, ''))
              .filter((e, i, all) => all.indexOf(e) === i)
              .join(', ')}`
          : 'helm hooks: none (the installed revision again: hooks run only for a new one)',
      );
  }
  return `${lines.join('\n')}\n`;
}
