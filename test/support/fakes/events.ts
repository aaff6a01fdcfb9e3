/** Events kept in a list (EventRecorder, src/reconciler/events.ts), for tests to read. */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { EventRecorder } from '../../../src/reconciler/events.ts';

export interface RecordedEvent {
  bd: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export class FakeEvents implements EventRecorder {
  readonly events: RecordedEvent[] = [];

  event(bd: BundleDeployment, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.events.push({ bd: bd.metadata.name, type, reason, message });
  }

  /** the reasons recorded for a BD, in order */
  reasons(bd: string): string[] {
    return this.events.filter((e) => e.bd === bd).map((e) => e.reason);
  }
}
