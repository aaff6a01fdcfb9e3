/**
 * Fetch and render: the objects for the resolved sources — remembered from the last reconcile,
 * reused from a stored revision with the same inputs (no fetch, no render), or fetched and
 * rendered by renderBundle, the one render path `hoist render` uses too. Sets Unpacked.
 */
import { splitHooks } from '../../apply/hooks.ts';
import type { RevisionStore } from '../../revisions/revision-store.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { Resolved } from '../../sources/source.ts';
import { asHoistError } from '../../util/errors.ts';
import { hashOf } from '../../util/hash.ts';
import type { ValuesFromText } from '../../processors/processor.ts';
import { treeBytes } from '../../util/tree-bytes.ts';
import { readCredentials, refScope, secretRefOf } from '../inputs/credentials.ts';
import { renderBundle } from '../render-bundle.ts';
import { readSourceCA } from '../inputs/source-ca.ts';
import { readValuesFrom, valuesFromRefs } from '../inputs/values-from.ts';
import { postBuildInputKey, postBuildOf, readPostBuild, substituteFromRefs, type PostBuildInput } from '../inputs/post-build.ts';
import { DECRYPTION_SUBJECT, decryptionInput, readDecryptionKeys } from '../inputs/decryption-keys.ts';
import type { DecryptionKeys } from '../../processors/sops/age-keys.ts';
import type { Rendered } from '../../revisions/revision-objects.ts';
import { revisionRedactions } from '../redaction.ts';
import { clusterClient, type StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';
import { setUnpacked } from '../status.ts';

export async function renderRevision(ctx: StepContext, s: ReconcileState, resolved: readonly Resolved[]): Promise<Rendered> {
  const rendered = await renderOrReuse(ctx, s, resolved);
  // what this BD's status, Events and log lines must not show from here on (redaction.ts)
  const secrets = s.bd.spec.decryption ? revisionRedactions(rendered) : [];
  if (secrets.length) ctx.redactions.set(s.name, secrets);
  else ctx.redactions.delete(s.name);
  const hooks = rendered.hooks.length ? ` and ${rendered.hooks.length} hooks` : '';
  setUnpacked(s, `${rendered.objects.length} objects${hooks}, ${rendered.contentDigest}`);
  s.status.contentDigest = rendered.contentDigest;
  return rendered;
}

/** what a render reads beyond the spec: re-read on every reconcile, so a changed Secret or ConfigMap is a new input */
interface RenderReads {
  valuesFrom: Awaited<ReturnType<typeof readBDValuesFrom>>;
  postBuild: Awaited<ReturnType<typeof readBDPostBuild>>;
  decryption: Awaited<ReturnType<typeof readBDDecryption>>;
}

async function renderOrReuse(ctx: StepContext, s: ReconcileState, resolved: readonly Resolved[]): Promise<Rendered> {
  const { d } = ctx;
  const reads: RenderReads = {
    valuesFrom: await readBDValuesFrom(ctx, s),
    postBuild: await readBDPostBuild(ctx, s),
    decryption: await readBDDecryption(ctx, s),
  };
  const inputs = renderInputs(s, resolved, reads);
  const memo = ctx.objects.renderedWith(s.name, inputs);
  if (memo) return ctx.objects.placed(s.name, memo);
  const refused = ctx.objects.refusedWith(s.name, inputs);
  if (refused) throw refused;

  const reuse = await storedRevision(d.revisions, s.name, inputs);
  if (reuse)
    return remember(ctx, s.name, { inputs, contentDigest: reuse.contentDigest, ...split(reuse.objects), ...(reuse.stored ? { stored: reuse.stored } : {}) });

  const out = await d.renders.run(() => render(ctx, s, resolved, reads), s.signal);
  for (const w of out.warnings) d.log.warn({ bd: s.name, format: s.spec.format }, w);
  // the size cap is checked on the processor's objects, before they are copied (detached) and
  // kept: a revision refused for its size costs its render once, and is never held in memory
  const parts = split(out.objects);
  const packed = await d.revisions.pack([...parts.objects, ...parts.hooks], out.contentDigest).catch((e: unknown) => e as Error);
  if (packed instanceof Error) {
    ctx.objects.rememberRefused(s.name, inputs, packed);
    throw packed;
  }
  return remember(ctx, s.name, {
    inputs,
    contentDigest: out.contentDigest,
    ...split(detached(out.objects)),
    packed,
    ...(out.sensitive ? { sensitive: out.sensitive } : {}),
  });
}

/** the hash of everything a render depends on: equal inputs, the same revision (memo, stored revision) */
function renderInputs(s: ReconcileState, resolved: readonly Resolved[], reads: RenderReads): string {
  const { spec } = s;
  const { valuesFrom, postBuild, decryption } = reads;
  return hashOf({
    format: spec.format,
    config: spec.config ?? {},
    installNamespace: spec.installNamespace ?? '',
    name: s.name,
    // the secret is part of the input: pointing a source at other credentials re-checks access
    sources: resolved.map((r, i) => {
      const src = spec.sources[i];
      return { key: r.key, destination: src?.destination ?? '', auth: src ? secretRefOf(src) : undefined };
    }),
    // the values' text only inside this hash (stored with the revision, in the controller's namespace)
    ...(valuesFrom.length ? { valuesFrom } : {}),
    // the variables' values too, only inside this hash (a Secret's among them)
    ...(postBuild ? { postBuild: postBuildInputKey(postBuild) } : {}),
    // a digest of the age identities, never the identities
    ...(decryption ? { decryption: decryptionInput(decryption) } : {}),
  });
}

/** fetch and process (render-bundle.ts), within the renders semaphore */
function render(ctx: StepContext, s: ReconcileState, resolved: readonly Resolved[], reads: RenderReads): ReturnType<typeof renderBundle> {
  const { d } = ctx;
  const { spec } = s;
  return renderBundle(
    { store: d.store, sourceFor: d.sourceFor, processorFor: d.processorFor, scopes: clusterClient(ctx).discovery, cluster: clusterClient(ctx).discovery },
    {
      name: s.name,
      spec,
      resolved,
      helmValuesFrom: reads.valuesFrom,
      postBuild: reads.postBuild,
      decryption: reads.decryption,
      signal: s.signal,
      time: s.time,
      // credentials also on a store hit: the source proves this BD's access before serving
      // content another BD fetched (DESIGN §2); without them it would ask anonymously
      credentials: (i) => readCredentials(d.client, d.controllerNamespace, s.bd, spec.sources[i]!, d.identities.defaultServiceAccount),
      ca: (i) => readSourceCA(d.client, d.controllerNamespace, s.bd, spec.sources[i]!, d.identities.defaultServiceAccount),
      onFetched: async (kind, served, dir) => {
        if (!served || !d.metrics) return;
        d.metrics.fetches.inc({ kind, result: served });
        // counted off the reconcile's path: a metric need not delay the render
        const bytes = d.metrics.fetchBytes;
        if (served === 'downloaded')
          void treeBytes(dir).then(
            (n) => bytes.inc({ kind }, n),
            () => undefined,
          );
      },
    },
  );
}

/**
 * A copy through JSON of freshly processed objects, which the BD's memo keeps (RevisionObjects):
 * a parser's strings are slices of the text they were parsed from (V8 sliced strings), so keeping
 * the parsed objects would keep each BD's whole rendered manifest text alive beside them. The
 * copy is what a revision loaded from its Secret is (JSON on the wire and in the store).
 */
function detached(objects: KubeObject[]): KubeObject[] {
  return JSON.parse(JSON.stringify(objects)) as KubeObject[];
}

/** config.helm.valuesFrom of the BD, read as the BD's credentials are (inputs/values-from.ts) */
async function readBDValuesFrom(ctx: StepContext, s: ReconcileState): Promise<ValuesFromText[]> {
  const refs = valuesFromRefs(s.bd);
  if (refs.length === 0) return [];
  const { d } = ctx;
  const scope = refScope(d.client, d.controllerNamespace, s.bd, d.identities.defaultServiceAccount, 'config.helm.valuesFrom');
  return readValuesFrom(scope, refs);
}

/** spec.postBuild of the BD with its substituteFrom read as the BD's credentials are (inputs/post-build.ts) */
async function readBDPostBuild(ctx: StepContext, s: ReconcileState): Promise<PostBuildInput | undefined> {
  const postBuild = postBuildOf(s.bd);
  if (!postBuild) return undefined;
  const { d } = ctx;
  const scope = substituteFromRefs(s.bd).length
    ? refScope(d.client, d.controllerNamespace, s.bd, d.identities.defaultServiceAccount, 'postBuild.substituteFrom')
    : undefined;
  return readPostBuild(scope, postBuild);
}

/** spec.decryption's age identities, read as the BD's credentials are (inputs/decryption-keys.ts) */
async function readBDDecryption(ctx: StepContext, s: ReconcileState): Promise<DecryptionKeys | undefined> {
  const name = s.bd.spec.decryption?.secretRef.name;
  if (!name) return undefined;
  const { d } = ctx;
  return readDecryptionKeys(refScope(d.client, d.controllerNamespace, s.bd, d.identities.defaultServiceAccount, DECRYPTION_SUBJECT), name);
}

/**
 * The stored revision these inputs produced, with its objects. Reading the revision store (the
 * API server) failing is named as such, not as a source's fetch: transient, retried with backoff.
 */
export async function storedRevision(
  revisions: Pick<RevisionStore, 'findByInputs' | 'load'>,
  name: string,
  inputs: string,
): Promise<Pick<Rendered, 'contentDigest' | 'objects' | 'stored'> | undefined> {
  let subject = 'stored revisions';
  try {
    const stored = await revisions.findByInputs(name, inputs);
    if (!stored) return undefined;
    subject = `stored revision ${stored.number}`;
    const objects = await revisions.load(name, stored);
    return objects ? { contentDigest: stored.contentDigest, objects, stored } : undefined;
  } catch (e) {
    throw asHoistError(e, { stage: 'fetch', code: ReconcileCode.RevisionStore, subject, terminal: false });
  }
}

/** a revision's objects as the processor gave them: the managed ones and the Helm hooks */
function split(all: KubeObject[]): Pick<Rendered, 'objects' | 'hooks'> {
  const { managed, hooks } = splitHooks(all);
  return { objects: managed, hooks };
}

function remember(ctx: StepContext, name: string, r: Rendered): Promise<Rendered> {
  ctx.objects.rememberRendered(name, r);
  return ctx.objects.placed(name, r);
}
