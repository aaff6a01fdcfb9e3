/**
 * What applying a BundleDeployment's rendered content would do, through the applier's own plan
 * (plan.ts) and without writing anything: the revision number it would get, the apply steps and
 * the Helm hooks it would run, each object's collision verdict and, from a server-side dry-run
 * apply as the lineage's field manager made as the BD's acting identity (its ServiceAccount),
 * what it would look like after the apply — including the fields a takeover of other managers'
 * fields would remove, and the driftIgnore'd fields the apply leaves as they are — and what a
 * successful apply would prune (prune.ts planPrune). A read or write the acting identity may not
 * make is reported as the refusal the applier meets. `hoist diff` presents it.
 */
import { withDefaults } from '../../api/v1alpha2/defaults.ts';
import { lineageOf, type BundleDeployment, type HookEvent } from '../../api/v1alpha2/types.ts';
import { ApiError, isForbidden, isImmutableField, isKindNotServed, isNotFound, isTransient } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { HoistError } from '../util/errors.ts';
import { crdUpgradeProblems, describeCrdRefusal } from './crd-safety.ts';
import { splitFields, withValuesOf } from './drift-ignore.ts';
import { afterTakeOver, DEFAULT_OVERRIDE_MANAGERS, takenPaths, type ManagedFieldsEntry } from './field-managers.ts';
import { hooksFor, splitHooks } from './hooks.ts';
import { isCRD, objectId } from './object-id.ts';
import { planSteps, type ApplyStep } from './phases.ts';
import {
  ANNOTATION_RECREATE,
  applyErrorMessage,
  applyTargetOf,
  conflictsOf,
  fieldManagerFor,
  planApply,
  replacedRevisions,
  revisionNumberFor,
  takeOverScope,
  type NumberedRevision,
  type Planned,
} from './plan.ts';
import { planPrune, staleObjects, type PruneDecision } from './prune.ts';
import { KEPT_MANAGER } from './retention.ts';
import { ApplyCode } from './errors.ts';

export type ObjectPreview = {
  id: string;
  subject: string;
  /** the live object (as the acting identity read it), when it exists */
  live?: KubeObject;
} & (
  | {
      /** what the apply would do, and the object after it (the dry-run's answer, takeovers applied) */
      kind: 'create' | 'update' | 'recreate';
      after: KubeObject;
      /** adopt (unowned), steal (another lineage, collisionProtection None), handover (another BD of this lineage), reclaim (kept by this lineage, retention.ts) */
      takeOver?: 'adopt' | 'steal' | 'handover' | 'reclaim';
      /** "manager: field" of hand edits (interactive managers' fields) the apply takes over and so reverts */
      reverts?: string[];
    }
  /** its namespace or kind comes with this revision: no dry-run can place it yet; `after` is what is sent */
  | { kind: 'unplaced'; after: KubeObject }
  /** the applier would refuse or fail it: collision protection, the acting identity's rights, the API server */
  | { kind: 'refused'; why: string }
);

export interface RevisionPreview {
  /** the number the content gets (a stored revision with the same content keeps its number) */
  revision: number;
  /** new content (install or upgrade); false: the active revision again (drift correction) */
  isNew: boolean;
  steps: ApplyStep<KubeObject>[];
  /** the hook events the change runs (a new revision's pre before the steps, post after; none for the active revision), each with its hooks in run order */
  hooks: Array<{ event: HookEvent; hooks: KubeObject[] }>;
  /** the content has Helm hooks (of any event) */
  hasHooks: boolean;
  objects: ObjectPreview[];
  /**
   * why the apply would fail, as the applier says it: reads or writes the acting identity may not
   * make, collision protection's refusals, unsafe CRD changes, objects the API server refuses
   */
  refusal?: string;
  /** objects of the revisions it replaces that a successful apply deletes, keeps (a retention policy: let go of), or leaves */
  prune: PruneDecision[];
  /** optional objects whose kind is not served: skipped */
  skippedOptional: string[];
}

/** what the preview reads of the stored revisions; the revision store (a layer above) satisfies it */
export interface StoredRevisions {
  list(bdName: string): Promise<NumberedRevision[]>;
  load(bdName: string, rev: NumberedRevision): Promise<KubeObject[] | undefined>;
}

export interface PreviewDeps {
  /** the controller's view: discovery */
  client: KubeClient;
  /** who acts for the BundleDeployment (its ServiceAccount, impersonated): every read and dry-run */
  actor: KubeClient;
  /** the controller's revision store (src/revisions/revision-store.ts): numbering and what the active revision holds */
  revisions: StoredRevisions;
  /** the controller's --override-manager names (default DEFAULT_OVERRIDE_MANAGERS) */
  overrideManagers?: readonly string[];
  concurrency?: number;
}

/**
 * Previews applying `rendered` (a render of `bd`, hooks included) over `installed` (the live
 * BundleDeployment of that name, if any). Reads and dry-runs only. Throws on an API failure it
 * cannot explain (no answer, a 5xx), and when the active revision is not in the store.
 */
export async function previewRevision(
  deps: PreviewDeps,
  bd: BundleDeployment,
  installed: BundleDeployment | undefined,
  rendered: { objects: readonly KubeObject[]; contentDigest: string },
): Promise<RevisionPreview> {
  const name = bd.metadata.name;
  const spec = withDefaults(bd.spec);
  const status = installed?.status;
  const concurrency = deps.concurrency ?? 8;
  // as the applier: the fields of a kept object (retention.ts) too
  const overrideManagers = new Set([...(deps.overrideManagers ?? DEFAULT_OVERRIDE_MANAGERS), KEPT_MANAGER]);
  const { managed, hooks } = splitHooks(rendered.objects);
  const revision = revisionNumberFor(rendered.contentDigest, installed ? await deps.revisions.list(name) : [], status);
  const isNew = status?.activeRevision?.contentDigest !== rendered.contentDigest;
  const target = { ...applyTargetOf(bd, spec, revision, deps.actor), ...(isNew ? { crdSafety: spec.upgrade.crdSafety } : {}) };
  const outline = hookRunsFor(hooks, !isNew ? undefined : status?.activeRevision ? 'upgrade' : 'install');

  let plan: Awaited<ReturnType<typeof planApply>>;
  try {
    plan = await planApply({ client: deps.client, concurrency }, target, managed);
  } catch (e) {
    // reads the acting identity may not make fail the apply before any write: that is the preview
    if (!(e instanceof HoistError) || e.code !== ApplyCode.Forbidden) throw e;
    return { revision, isNew, steps: planSteps(managed, (o) => o).steps, ...outline, objects: [], refusal: e.message, prune: [], skippedOptional: [] };
  }
  const manager = fieldManagerFor(target.lineage);
  const objects = await mapLimit(plan.planned, concurrency, (p) => previewObject(deps.actor, manager, p, overrideManagers));
  for (const src of plan.deferred) objects.push({ id: objectId(src), subject: describeObject(src), kind: 'unplaced', after: src });

  const refusals = conflictsOf(plan.planned).map((c) => c.line);
  if (target.crdSafety === 'Enforce') refusals.push(...unsafeCRDs(plan.planned));
  for (const o of objects) if (o.kind === 'refused' && !refusals.some((r) => r.startsWith(`${o.subject} `))) refusals.push(`${o.subject}: ${o.why}`);

  const prune = isNew && installed ? await previewPrune(deps, bd, status, revision, managed) : [];
  return {
    revision,
    isNew,
    steps: plan.steps,
    ...outline,
    objects,
    ...(refusals.length ? { refusal: refusals.join('; ') } : {}),
    prune,
    skippedOptional: plan.skippedOptional,
  };
}

/** what a new revision would prune: the objects of the revisions it replaces that it lacks (planPrune, read-only) */
async function previewPrune(
  deps: PreviewDeps,
  bd: BundleDeployment,
  status: BundleDeployment['status'],
  revision: number,
  managed: readonly KubeObject[],
): Promise<PruneDecision[]> {
  const name = bd.metadata.name;
  const spec = withDefaults(bd.spec);
  const previous: KubeObject[] = [];
  for (const r of replacedRevisions(status, revision)) {
    const all = await deps.revisions.load(name, r);
    if (!all)
      throw new HoistError(`revision ${r.number} of ${name} is not in the revision store: cannot tell what would be pruned`, {
        stage: 'apply',
        code: ApplyCode.RevisionMissing,
        subject: `revision ${r.number}`,
        terminal: false,
      });
    previous.push(...splitHooks(all).managed);
  }
  return planPrune(deps.actor, { name, lineage: lineageOf(bd) }, staleObjects(previous, managed), {
    keepCRDs: !spec.deleteCRDsOnUninstall,
    retained: managed,
    concurrency: deps.concurrency ?? 8,
  });
}

/** the hooks a change runs, per event in the order the controller runs them: for an install or upgrade; none for the installed revision again */
export function hookRunsFor(hooks: readonly KubeObject[], action: 'install' | 'upgrade' | undefined): Pick<RevisionPreview, 'hooks' | 'hasHooks'> {
  const events: HookEvent[] = action === 'upgrade' ? ['pre-upgrade', 'post-upgrade'] : action === 'install' ? ['pre-install', 'post-install'] : [];
  return { hooks: events.map((event) => ({ event, hooks: hooksFor(hooks, event) })), hasHooks: hooks.length > 0 };
}

/** the CRD changes crdSafety Enforce refuses, as the applier words them */
function unsafeCRDs(planned: readonly Planned[]): string[] {
  const problems = planned.filter((p) => isCRD(p.obj) && p.live && p.decision.action !== 'create').flatMap((p) => crdUpgradeProblems(p.live!, p.obj));
  return problems.length ? [describeCrdRefusal(problems)] : [];
}

/**
 * One object: its collision verdict, then a server-side dry-run apply of what the applier sends
 * (the full object on create, else without driftIgnore'd fields), forced, as the lineage's field
 * manager and the acting identity; then the applier's takeover of other managers' fields, and the
 * ignored fields left as they are.
 */
async function previewObject(actor: KubeClient, manager: string, p: Planned, overrideManagers: ReadonlySet<string>): Promise<ObjectPreview> {
  const base = { id: p.id, subject: p.subject, ...(p.live ? { live: p.live } : {}) };
  const d = p.decision;
  if (d.action === 'refuse') return { ...base, kind: 'refused', why: `owned by ${d.owner}: ${d.why}` };
  const body = d.action === 'create' && p.ignored ? p.ignored.full : p.obj;
  const takeOver =
    d.action === 'adopt' || d.action === 'steal'
      ? d.action
      : d.action === 'update' && d.reclaim
        ? 'reclaim'
        : d.action === 'update' && d.handover
          ? 'handover'
          : undefined;
  let after: KubeObject;
  try {
    after = await actor.apply(body, { fieldManager: manager, force: true, dryRun: true });
  } catch (e) {
    // its namespace or kind comes with this revision: the dry-run cannot place it yet
    if (!p.live && (isNotFound(e) || isKindNotServed(e))) return { ...base, kind: 'unplaced', after: body };
    if (isForbidden(e)) return { ...base, kind: 'refused', why: `apply refused: ${(e as ApiError).apiMessage}` };
    // an immutable field the bundle opts in to re-create for: deleted and created as sent
    if (isImmutableField(e) && p.obj.metadata.annotations?.[ANNOTATION_RECREATE] === 'true')
      return { ...base, kind: 'recreate', after: body, ...(takeOver ? { takeOver } : {}) };
    if (e instanceof ApiError && !isTransient(e)) return { ...base, kind: 'refused', why: applyErrorMessage(e) };
    throw e;
  }
  const scope = takeOverScope(p, overrideManagers);
  let reverts: string[] = [];
  if (scope && p.live) {
    after = afterTakeOver(after, manager, scope.only, p.ignored?.pointers);
    if (d.action === 'update') {
      const ignored = p.ignored?.pointers;
      const live = p.live;
      reverts = takenPaths(
        (live.metadata.managedFields ?? []) as ManagedFieldsEntry[],
        manager,
        scope.only,
        ignored ? (f) => splitFields(f, live, ignored) : undefined,
      );
    }
  }
  // fields nobody applies any more keep the values they have (the applier gives them up first)
  if (p.ignored && p.live) after = withValuesOf(after, p.live, p.ignored.pointers);
  // a kept object's fields taken back are no hand edits
  reverts = reverts.filter((f) => !f.startsWith(`${KEPT_MANAGER}: `));
  return { ...base, kind: d.action === 'create' ? 'create' : 'update', after, ...(takeOver ? { takeOver } : {}), ...(reverts.length ? { reverts } : {}) };
}
