/**
 * The managed-object watches as the pipeline sees them (PipelineManaged): health read off the
 * FakeKube's objects, every write observed at once. An object is Ready unless it carries the
 * annotation FAKE_HEALTH ("InProgress" or "Failed"): a bundle says how its objects will do. No
 * informers and no health rules (src/health has its own tables; test/e2e the real watches).
 */
import type { Verdict } from '../../../src/health/verdict.ts';
import type { CheckVerdict } from '../../../src/reconciler/routing/managed-objects.ts';
import type { PipelineManaged } from '../../../src/reconciler/pipeline/context.ts';
import type { FakeKube } from './kube.ts';

/** how a live object's fake health is set: InProgress or Failed (absent: Ready) */
export const FAKE_HEALTH = 'test.hoist.dev/health';

export class FakeManagedObjects implements PipelineManaged {
  constructor(private readonly kube: FakeKube) {}

  async watch(): Promise<void> {}
  setProbes(): void {}
  async settled(): Promise<void> {}
  probeError(): Error | undefined {
    return undefined;
  }
  checkVerdicts(): CheckVerdict[] {
    return [];
  }
  async observedWrites(): Promise<boolean> {
    return true;
  }

  health(id: string): Verdict | undefined {
    const live = this.kube.byId(id);
    if (!live) return undefined;
    const health = live.metadata.annotations?.[FAKE_HEALTH];
    if (health === 'InProgress' || health === 'Failed') return { readiness: health, message: `${FAKE_HEALTH}=${health}`, rule: FAKE_HEALTH };
    return { readiness: 'Ready', rule: FAKE_HEALTH };
  }
}
