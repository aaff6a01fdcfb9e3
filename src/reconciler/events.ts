/**
 * Kubernetes Events about a BundleDeployment (cluster-scoped, so they live in "default", as
 * kubectl expects). Best effort: an event that cannot be written is logged, never fatal.
 * Messages are built by Hoist from object names and reasons; they never carry secret values.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import type { KubeClient } from '../kube/types.ts';
import { clip } from './conditions.ts';

export interface EventRecorder {
  event(bd: BundleDeployment, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export class ApiEventRecorder implements EventRecorder {
  constructor(
    private readonly client: KubeClient,
    private readonly log: Logger,
    private readonly component = 'hoist',
  ) {}

  event(bd: BundleDeployment, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const now = new Date().toISOString();
    const ev = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${bd.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: 'default' },
      involvedObject: { apiVersion: bd.apiVersion, kind: bd.kind, name: bd.metadata.name, uid: bd.metadata.uid, resourceVersion: bd.metadata.resourceVersion },
      reason,
      message: clip(message, 1024),
      type,
      source: { component: this.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      reportingComponent: this.component,
      reportingInstance: this.component,
    };
    this.client.create(ev).catch((e: unknown) => this.log.warn({ err: e instanceof Error ? e.message : String(e), reason }, 'event not recorded'));
    this.log.info({ bd: bd.metadata.name, reason, type }, message);
  }
}
