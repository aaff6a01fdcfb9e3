/**
 * The Helm hook runner as the pipeline sees it (PipelineHooks): each hook of the event "runs" at
 * once and succeeds, unless the test names an event whose first hook fails. Runs are recorded.
 * Real hook Jobs and their delete policies: test/integration/apply/hooks.test.ts, test/e2e.
 */
import type { HookEvent, HookRun } from '../../../api/v1alpha2/types.ts';
import { hooksFor, type HookEventResult, type HookRunOptions, type HookTarget } from '../../../src/apply/hooks.ts';
import { describeObject, type KubeObject } from '../../../src/kube/types.ts';
import type { PipelineHooks } from '../../../src/reconciler/pipeline/context.ts';

export class FakeHooks implements PipelineHooks {
  /** every run, in order */
  readonly runs: HookRun[] = [];
  /** events whose first hook fails, with the message it fails with */
  readonly failing = new Map<HookEvent, string>();

  constructor(private readonly now: () => Date) {}

  async run(_target: HookTarget, event: HookEvent, hooks: readonly KubeObject[], opts: HookRunOptions): Promise<HookEventResult> {
    const runs: HookRun[] = [];
    for (const h of hooksFor(hooks, event)) {
      if (opts.done?.some((r) => r.event === event && r.kind === h.kind && r.name === h.metadata.name && r.result === 'Succeeded')) continue;
      const message = this.failing.get(event);
      const at = this.now().toISOString();
      const run: HookRun = {
        event,
        kind: h.kind,
        name: h.metadata.name,
        ...(h.metadata.namespace ? { namespace: h.metadata.namespace } : {}),
        result: message ? 'Failed' : 'Succeeded',
        startedAt: at,
        completedAt: at,
        ...(message ? { message } : {}),
      };
      runs.push(run);
      this.runs.push(run);
      if (message) return { runs, failed: { run, subject: `${event} hook ${describeObject(h)}` } };
    }
    return { runs };
  }
}
