/**
 * The Operator controller, on Hoist's own runtime (src/kube: Informer, Controller/WorkQueue,
 * the REST client). One reconcile of an Operator:
 * 1. every live BundleDeployment of it follows `spec.paused` (pausing is pausing the BDs: all of
 *    them, or an older member of the lineage would start applying);
 * 2. no BundleDeployment for `spec.version` yet: create one (same lineage, next sequence); the
 *    older one keeps its objects until the new one takes them over in place (DESIGN §4);
 * 3. the version's BundleDeployment succeeded (contract.ts): record it as installed and delete
 *    the older ones — only now, and deleting them deletes nothing the lineage still installs;
 * 4. it failed: report its reason upward (`status.lastFailure`, the Progressing condition) and roll
 *    back by deleting it, so the previous BundleDeployment is the lineage's newest again and
 *    re-applies its stored revision. The failed version is not retried until spec.version changes.
 * Idempotent: every step reads the caches and writes only what differs.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { API_VERSION, KIND, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { isConflict, isNotFound } from '../../src/kube/api-error.ts';
import { Controller, type ReconcileResult } from '../../src/kube/controller.ts';
import { Informer } from '../../src/kube/informer.ts';
import type { KubeClient, KubeObject } from '../../src/kube/types.ts';
import { desiredBundleDeployment, sequenceOf, versionOf } from './bundle-deployments.ts';
import { verdict } from './contract.ts';
import { LABEL_OPERATOR, OP_API_VERSION, OP_KIND, type Operator, type OperatorConditionType, type OperatorStatus } from './types.ts';

const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const OP = { apiVersion: OP_API_VERSION, kind: OP_KIND } as const;

export interface OperatorControllerOptions {
  client: KubeClient;
  log: Logger;
  /** reconcile only Operators matching this label selector (tests share one cluster) */
  selector?: string;
  workers?: number;
  registry?: Registry;
}

type Cached<T> = T & KubeObject;

export class OperatorController {
  readonly controller: Controller;
  private readonly operators: Informer<Cached<Operator>>;
  private readonly bds: Informer<Cached<BundleDeployment>>;

  constructor(private readonly opts: OperatorControllerOptions) {
    const log = opts.log;
    this.operators = new Informer<Cached<Operator>>({ client: opts.client, type: OP, ...(opts.selector ? { labelSelector: opts.selector } : {}), logger: log });
    // only the BundleDeployments Operators created
    this.bds = new Informer<Cached<BundleDeployment>>({ client: opts.client, type: BD, labelSelector: LABEL_OPERATOR, logger: log });
    this.controller = new Controller({
      name: 'operator',
      reconcile: (name) => this.reconcile(name),
      workers: opts.workers ?? 2,
      logger: log,
      ...(opts.registry ? { registry: opts.registry } : {}),
    });
    const enqueue = (o: Operator): void => this.controller.enqueue(o.metadata.name);
    this.operators.addHandler({ onAdd: enqueue, onUpdate: (_, b) => enqueue(b), onDelete: enqueue });
    const owner = (bd: BundleDeployment): void => {
      const op = bd.metadata.labels?.[LABEL_OPERATOR];
      if (op) this.controller.enqueue(op);
    };
    this.bds.addHandler({ onAdd: owner, onUpdate: (_, b) => owner(b), onDelete: owner });
  }

  async start(signal?: AbortSignal): Promise<void> {
    this.operators.start();
    this.bds.start();
    await Promise.all([this.operators.waitForSync(signal), this.bds.waitForSync(signal)]);
    this.controller.start(signal);
  }

  async stop(): Promise<void> {
    await this.controller.stop(10_000);
    await Promise.all([this.operators.stop(), this.bds.stop()]);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const op = this.operators.getByName(name);
    // deleted: the BundleDeployments' ownerReferences let the garbage collector remove them
    if (!op || op.metadata.deletionTimestamp) return {};
    const mine = this.bds
      .list()
      .filter((b) => b.metadata.labels?.[LABEL_OPERATOR] === name)
      .sort((a, b) => sequenceOf(a) - sequenceOf(b));
    const live = mine.filter((b) => !b.metadata.deletionTimestamp);
    const status: OperatorStatus = structuredClone(op.status ?? {});
    const set = conditionSetter(status, op.metadata.generation ?? 0);
    const { version } = op.spec;
    const paused = op.spec.paused === true;

    for (const bd of live) if ((bd.spec.paused === true) !== paused) await this.patchBD(bd.metadata.name, { spec: { paused } });
    set(
      'Paused',
      paused ? 'True' : 'False',
      paused ? 'Paused' : 'Reconciling',
      paused ? `${live.length} BundleDeployment(s) paused: nothing is applied or reverted` : 'not paused',
    );
    if (paused) {
      set('Progressing', 'False', 'Paused', 'paused by spec.paused');
      return this.writeStatus(op, status);
    }

    const target = live.filter((b) => versionOf(b) === version).at(-1);
    const installed = live.filter((b) => b !== target).at(-1);
    if (!target) {
      if (status.lastFailure?.version === version) {
        // rolled back earlier: wait for the previous BundleDeployment to be back, then for a new version
        const back = installed && verdict(installed).state === 'succeeded';
        set(
          'Progressing',
          back ? 'False' : 'True',
          'RolledBack',
          `version ${version} failed (${status.lastFailure.reason}: ${status.lastFailure.message}); ${back ? `version ${status.installedVersion} is installed` : `rolling back to version ${status.installedVersion}`}`,
        );
        return this.writeStatus(op, status);
      }
      const sequence = Math.max(0, ...mine.map(sequenceOf)) + 1;
      const bd = desiredBundleDeployment(op, sequence);
      await this.opts.client.create(bd as unknown as KubeObject);
      this.opts.log.info({ operator: name, version, bundleDeployment: bd.metadata.name }, 'created BundleDeployment');
      set('Progressing', 'True', 'RollingOut', `installing version ${version} through BundleDeployment ${bd.metadata.name}`);
      return this.writeStatus(op, status);
    }

    const v = verdict(target);
    if (v.state === 'succeeded') {
      status.installedVersion = version;
      status.bundleDeployment = target.metadata.name;
      set('Installed', 'True', 'Installed', `version ${version} is installed by BundleDeployment ${target.metadata.name}`);
      set('Progressing', 'False', 'Succeeded', `version ${version} is installed`);
      // the handover is complete: the older members own nothing the new one does not install
      for (const old of live) if (old !== target) await this.deleteBD(old.metadata.name, `superseded by ${target.metadata.name}`);
      return this.writeStatus(op, status);
    }
    if (v.state === 'failed') {
      status.lastFailure = { version, bundleDeployment: target.metadata.name, reason: v.reason, message: v.message };
      if (installed) {
        // roll back: the previous member is the lineage's newest again and re-applies what it installed
        await this.deleteBD(target.metadata.name, `version ${version} failed: ${v.reason}`);
        set('Progressing', 'True', 'RolledBack', `version ${version} failed (${v.reason}: ${v.message}); rolling back to version ${status.installedVersion}`);
      } else {
        set('Installed', 'False', v.reason, `version ${version} failed: ${v.message}`);
        set('Progressing', 'False', 'Failed', `version ${version} failed (${v.reason}); nothing earlier to roll back to`);
      }
      return this.writeStatus(op, status);
    }
    set('Progressing', 'True', 'RollingOut', `version ${version} (BundleDeployment ${target.metadata.name}): ${v.message}`);
    if (!status.installedVersion) set('Installed', 'False', 'Pending', 'nothing installed yet');
    return this.writeStatus(op, status);
  }

  private async patchBD(name: string, patch: Record<string, unknown>): Promise<void> {
    await this.opts.client.patch(BD, name, undefined, patch, 'merge');
  }

  private async deleteBD(name: string, why: string): Promise<void> {
    this.opts.log.info({ bundleDeployment: name, why }, 'deleting BundleDeployment');
    await this.opts.client.delete(BD, name, undefined).catch((e: unknown) => {
      if (!isNotFound(e)) throw e;
    });
  }

  /** writes status when it changed; a conflict re-queues (the cache will bring the newer Operator) */
  private async writeStatus(op: Cached<Operator>, status: OperatorStatus): Promise<ReconcileResult> {
    status.observedGeneration = op.metadata.generation ?? 0;
    if (JSON.stringify(status) === JSON.stringify(op.status ?? {})) return {};
    try {
      await this.opts.client.updateStatus({ ...op, status } as unknown as KubeObject);
    } catch (e) {
      if (isConflict(e)) return { requeue: true };
      throw e;
    }
    return {};
  }
}

/** sets a condition, keeping lastTransitionTime unless the status changes */
function conditionSetter(status: OperatorStatus, generation: number) {
  return (type: OperatorConditionType, s: 'True' | 'False', reason: string, message: string): void => {
    const list = (status.conditions ??= []);
    const old = list.find((c) => c.type === type);
    const next = {
      type,
      status: s,
      reason,
      message,
      observedGeneration: generation,
      lastTransitionTime: old && old.status === s ? old.lastTransitionTime : new Date().toISOString(),
    };
    if (old) Object.assign(old, next);
    else list.push(next);
  };
}
