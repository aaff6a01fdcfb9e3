/**
 * Finds the cosign signatures of a manifest digest in its repository, through the image client
 * (credentials, mirrors' locations, CAs and plain-http rules all apply), and reads their payloads:
 *
 * - cosign's tag scheme: the manifest tagged `sha256-<hex>.sig` in the same repository;
 * - OCI 1.1 referrers (`cosign sign --registry-referrers-mode=oci-1-1`): manifests whose
 *   `subject` is the digest and whose artifactType is `application/vnd.dev.cosign.artifact.sig.v1+json`,
 *   listed by the referrers API (`GET /v2/<repo>/referrers/<digest>`), or, on a registry without
 *   that API (404), by the referrers tag schema's index tagged `sha256-<hex>`.
 *
 * Every manifest and payload blob is verified against its digest by the client; payloads are
 * capped at 1 MiB. Nothing here decides trust: that is ./cosign.ts.
 */
import { HoistError } from '../../../util/errors.ts';
import { classifyStatus } from '../../../util/http-status.ts';
import type { OperationContext, RegistryClient } from '../client.ts';
import type { Descriptor } from '../manifest.ts';
import { formatReference, type ImageReference } from '../reference.ts';
import { COSIGN_SIGNATURE_ANNOTATION, COSIGN_SIMPLESIGNING, type SignatureCandidate } from './cosign.ts';
import { SourceCode, sourceError } from '../../errors.ts';

export const COSIGN_ARTIFACT_TYPE = 'application/vnd.dev.cosign.artifact.sig.v1+json';
const MAX_PAYLOAD_BYTES = 1024 * 1024;
const MAX_REFERRERS_BYTES = 4 * 1024 * 1024;
const MAX_SIGNATURE_MANIFESTS = 16;

/** Every cosign signature layer found for `digest` in `repo` (registry and repository only). */
export async function findSignatures(client: RegistryClient, repo: ImageReference, digest: string, op: OperationContext): Promise<SignatureCandidate[]> {
  const at = (r: { tag?: string; digest?: string }): ImageReference => ({ registry: repo.registry, apiHost: repo.apiHost, repository: repo.repository, ...r });
  const tagged = await optional(client.getManifest(at({ tag: `${digest.replace(':', '-')}.sig` }), op));
  const out: SignatureCandidate[] = [];
  if (tagged)
    out.push(
      ...(await payloads(client, at({ digest: tagged.digest }), tagged.manifest.kind === 'manifest' ? tagged.manifest.layers : [], tagged.digest, 'tag', op)),
    );
  for (const d of (await referrers(client, at({ digest }), digest, op)).slice(0, MAX_SIGNATURE_MANIFESTS)) {
    const m = await optional(client.getManifest(at({ digest: d }), op));
    if (m?.manifest.kind === 'manifest') out.push(...(await payloads(client, at({ digest: d }), m.manifest.layers, d, 'referrers', op)));
  }
  return out;
}

/** Digests of the cosign signature manifests that refer to `digest`: the referrers API, else the fallback tag's index. */
async function referrers(client: RegistryClient, ref: ImageReference, digest: string, op: OperationContext): Promise<string[]> {
  const res = await client.request(
    ref,
    {
      method: 'GET',
      path: `/v2/${ref.repository}/referrers/${digest}?artifactType=${encodeURIComponent(COSIGN_ARTIFACT_TYPE)}`,
      headers: { accept: 'application/vnd.oci.image.index.v1+json' },
      scope: 'pull',
    },
    op,
  );
  let index: unknown;
  if (classifyStatus(res.statusCode) === SourceCode.NotFound) {
    // no referrers API (distribution v2): the referrers tag schema keeps the index at `sha256-<hex>`
    await res.body.dump();
    const fallback = await optional(client.getManifest({ ...ref, digest: undefined, tag: digest.replace(':', '-') }, op));
    if (!fallback || fallback.manifest.kind !== 'index') return [];
    index = JSON.parse(fallback.bytes.toString('utf8'));
  } else {
    if (res.statusCode < 200 || res.statusCode >= 300) await res.body.dump();
    client.check(res, ref, op, 'referrers');
    const text = await readReferrers(res.body as AsyncIterable<Buffer>, formatReference(ref), op);
    try {
      index = JSON.parse(text);
    } catch {
      throw sourceError('the referrers API answered with something other than JSON', {
        stage: op.stage,
        code: SourceCode.InvalidManifest,
        subject: formatReference(ref),
        terminal: false,
      });
    }
  }
  const manifests = (index as { manifests?: unknown } | null)?.manifests;
  if (!Array.isArray(manifests)) return [];
  // a registry may ignore the artifactType filter, and the tag index lists every kind of referrer
  return manifests
    .filter(
      (m): m is { artifactType: string; digest: string } =>
        typeof m === 'object' && m !== null && (m as { artifactType?: unknown }).artifactType === COSIGN_ARTIFACT_TYPE,
    )
    .map((m) => m.digest)
    .filter((d) => typeof d === 'string' && /^sha256:[a-f0-9]{64}$/.test(d));
}

/** The simple-signing layers of one signature manifest, each payload read and digest-checked. */
async function payloads(
  client: RegistryClient,
  ref: ImageReference,
  layers: readonly Descriptor[],
  manifest: string,
  via: 'tag' | 'referrers',
  op: OperationContext,
): Promise<SignatureCandidate[]> {
  const out: SignatureCandidate[] = [];
  for (const layer of layers) {
    if (layer.mediaType !== COSIGN_SIMPLESIGNING || layer.size > MAX_PAYLOAD_BYTES) continue;
    const blob = await client.openBlob(ref, layer, op);
    const chunks: Buffer[] = [];
    for await (const chunk of blob) chunks.push(Buffer.from(chunk));
    out.push({ manifest, via, payload: Buffer.concat(chunks), signature: layer.annotations?.[COSIGN_SIGNATURE_ANNOTATION] });
  }
  return out;
}

async function readReferrers(body: AsyncIterable<Buffer>, subject: string, op: OperationContext): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > MAX_REFERRERS_BYTES)
      throw sourceError(`the referrers list is larger than ${MAX_REFERRERS_BYTES} bytes`, {
        stage: op.stage,
        code: SourceCode.ManifestTooLarge,
        subject,
        terminal: true,
      });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** undefined for a 404 (no such tag or manifest), the value otherwise; other errors are thrown */
async function optional<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof HoistError && e.code === SourceCode.NotFound) return undefined;
    throw e;
  }
}
