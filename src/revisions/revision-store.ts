/**
 * Revision storage (DESIGN §3): the rendered objects of each revision, gzip-compressed JSON split
 * into immutable Secrets of at most ~900 KiB in the controller's namespace, named by a hash of
 * their content and labelled with the BundleDeployment and revision. A rollback or a restart needs
 * neither the registry nor the cache, and a cluster backup restores the controller's memory.
 */
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip, gunzip, gzipSync } from 'node:zlib';
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { isAlreadyExists } from '../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { formatBytes } from '../util/content-tree.ts';
import { HoistError } from '../util/errors.ts';
import { sha256Hex } from '../util/hash.ts';
import type { RevisionIndex } from './revision-index.ts';
import { ApplyCode } from '../apply/errors.ts';

const gunzipAsync = promisify(gunzip);
// below this, compressing inline costs less than a threadpool round trip, which waits behind
// everything else the event loop has to do during a wave of first installs (tens of microseconds vs milliseconds)
const INLINE_GZIP_BYTES = 64 * 1024;

/** how much of a large revision's JSON text goes to the compressor at a time */
const PACK_SLICE_CHARS = 1024 * 1024;

/**
 * gzip of `json`, or undefined as soon as the compressed form passes `maxBytes`. A large text is
 * compressed in slices as a stream: neither a UTF-8 copy of the whole text nor (for a revision
 * refused for its size) the compressed form beyond the limit is ever held.
 */
async function pack(json: string, maxBytes: number): Promise<Buffer | undefined> {
  if (json.length <= INLINE_GZIP_BYTES) {
    const packed = gzipSync(json);
    return packed.length <= maxBytes ? packed : undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    await pipeline(
      Readable.from(slices(json, PACK_SLICE_CHARS)),
      createGzip(),
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (size > maxBytes) return done(new OverLimit());
          chunks.push(chunk);
          done();
        },
      }),
    );
  } catch (e) {
    if (e instanceof OverLimit) return undefined;
    throw e;
  }
  return Buffer.concat(chunks, size);
}

class OverLimit extends Error {}

/** `text` in slices of about `n` characters, never splitting a surrogate pair (each slice is encoded to UTF-8 alone) */
function* slices(text: string, n: number): Generator<string> {
  for (let i = 0; i < text.length;) {
    let end = Math.min(i + n, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(i, end);
    i = end;
  }
}

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
/** not the owner label of managed objects: revisions must not show up in managed-object watches */
export const LABEL_REVISION_OF = 'core.rukpak.io/revision-of';
export const LABEL_REVISION = 'core.rukpak.io/revision';
/** first 63 hex characters of the hash of the inputs (resolved sources, format, config) */
export const LABEL_INPUTS = 'core.rukpak.io/inputs';
/** first 63 hex characters of the content digest (label values are at most 63 characters) */
export const LABEL_CONTENT = 'core.rukpak.io/content';
const LABEL_COMPONENT = 'app.kubernetes.io/component';
/** the label selector of every revision Secret (with LABEL_REVISION_OF set) */
export const REVISION_COMPONENT_SELECTOR = `${LABEL_COMPONENT}=revision`;
const ANNOTATION_DIGEST = 'core.rukpak.io/content-digest';
const ANNOTATION_CHUNK = 'core.rukpak.io/chunk';
/** data key of the first chunk holding the RevisionSpec as JSON */
const DATA_SPEC = 'spec';
/** Secrets are limited to 1 MiB; stay well below with room for metadata */
export const CHUNK_BYTES = 900 * 1024;
/** default cap on one revision's stored (compressed) size: 8 MiB, ten Secrets (hoist run --max-revision-size) */
export const DEFAULT_MAX_REVISION_BYTES = 8 * 1024 * 1024;
/** refusals remembered by content digest, so a refused revision is not compressed again on every poll */
const REFUSED_MEMO = 64;

/** a revision's objects as they are stored: gzip-compressed JSON, checked against the size cap */
export interface PackedRevision {
  readonly packed: Buffer;
}

/**
 * The spec fields that produced a revision, its sources pinned to what they resolved to (image
 * digest, git commit, http sha256): set on a BundleDeployment, they produce the same inputs hash,
 * so `hoist rollback` reuses the stored revision with no fetch and no render.
 */
export type RevisionSpec = Pick<BundleDeploymentSpec, 'format' | 'installNamespace' | 'config' | 'sources'>;

export interface RevisionRecord {
  number: number;
  contentDigest: string;
  /** hash of what produced the content; lets a spec that goes back reuse a revision unrendered */
  inputs?: string;
  /** what produced it (stored with the first chunk); absent for revisions stored before it was recorded */
  spec?: RevisionSpec;
  /** list() only: when the revision was stored (its Secrets' creationTimestamp) */
  storedAt?: string;
}

interface SecretObject extends KubeObject {
  data?: Record<string, string>;
  immutable?: boolean;
}

function contentLabel(digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 63);
}

export class RevisionStore {
  private readonly refused = new Map<string, HoistError>();

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    /** answers which revisions exist without a LIST once its watch has synced */
    private readonly index?: RevisionIndex,
    /** the largest revision stored, compressed (bytes); every BD's revisions are held to it */
    readonly maxBytes: number = DEFAULT_MAX_REVISION_BYTES,
  ) {}

  /**
   * Compresses a revision's objects as save() stores them and checks the size cap; writes
   * nothing. Throws a terminal HoistError (stage process, code `revision-too-large`) naming the
   * limit and the size when the compressed form is larger than `maxBytes`. A refusal is
   * remembered by content digest, so the same content is not compressed again to learn it.
   */
  async pack(objects: readonly KubeObject[], contentDigest?: string): Promise<PackedRevision> {
    const known = contentDigest ? this.refused.get(contentDigest) : undefined;
    if (known) throw known;
    const json = JSON.stringify(objects);
    const packed = await pack(json, this.maxBytes);
    if (packed) return { packed };
    // compression stopped at the limit: the size beyond it is not known, and not worth learning
    const err = new HoistError(
      `the rendered objects (${json.length} characters of JSON) compress to more than ${this.maxBytes} bytes, over the limit of ${formatBytes(this.maxBytes)} per revision (hoist run --max-revision-size); nothing was stored or applied`,
      { stage: 'process', code: ApplyCode.RevisionTooLarge, subject: 'revision size', terminal: true },
    );
    if (contentDigest) {
      if (this.refused.size >= REFUSED_MEMO) this.refused.delete(this.refused.keys().next().value!);
      this.refused.set(contentDigest, err);
    }
    throw err;
  }

  /**
   * Stores a revision's objects (or what pack() made of them). Idempotent: chunks are
   * content-addressed, so storing the same revision twice (e.g. after a crash between store and
   * status write) writes nothing new. Refuses, writing nothing, a revision over the size cap.
   * Returns the compressed size in bytes.
   */
  async save(bdName: string, rev: RevisionRecord, content: readonly KubeObject[] | PackedRevision): Promise<number> {
    const { packed } = 'packed' in content ? content : await this.pack(content, rev.contentDigest);
    const chunks: Buffer[] = [];
    for (let off = 0; off < packed.length; off += CHUNK_BYTES) chunks.push(packed.subarray(off, off + CHUNK_BYTES));
    await Promise.all(
      chunks.map(async (chunk, i) => {
        const secret: SecretObject = {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: `hoist-rev-${sha256Hex(`${bdName}\0${rev.number}\0${i}\0${sha256Hex(chunk)}`).slice(0, 40)}`,
            namespace: this.namespace,
            labels: {
              [LABEL_REVISION_OF]: bdName,
              [LABEL_REVISION]: String(rev.number),
              [LABEL_CONTENT]: contentLabel(rev.contentDigest),
              [LABEL_COMPONENT]: 'revision',
              ...(rev.inputs ? { [LABEL_INPUTS]: rev.inputs.slice(0, 63) } : {}),
            },
            annotations: { [ANNOTATION_DIGEST]: rev.contentDigest, [ANNOTATION_CHUNK]: `${i}/${chunks.length}` },
          },
          type: 'core.rukpak.io/revision',
          immutable: true,
          data: {
            objects: chunk.toString('base64'),
            ...(i === 0 && rev.spec ? { [DATA_SPEC]: Buffer.from(JSON.stringify(rev.spec)).toString('base64') } : {}),
          },
        };
        try {
          const created = await this.client.create(secret);
          this.index?.put(created);
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
          this.index?.put(secret);
        }
      }),
    );
    return packed.length;
  }

  /** every stored revision of a BD, oldest first, with when it was stored and the spec that produced it */
  async list(bdName: string): Promise<RevisionRecord[]> {
    // the index (metadata only) answers the controller's lookups without a LIST; without one
    // (the CLI) the Secrets are read whole, with the spec each revision was produced by
    const indexed = this.index?.secretsOf(bdName);
    const secrets: Array<{
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp?: string };
      data?: Record<string, string>;
    }> = indexed ? indexed.map((metadata) => ({ metadata })) : await this.secrets(bdName);
    const byNumber = new Map<number, RevisionRecord>();
    for (const s of secrets) {
      const n = Number(s.metadata.labels?.[LABEL_REVISION]);
      const d = s.metadata.annotations?.[ANNOTATION_DIGEST];
      if (!Number.isInteger(n) || !d) continue;
      const rec = byNumber.get(n) ?? { number: n, contentDigest: d };
      const created = s.metadata.creationTimestamp;
      if (created && (!rec.storedAt || created < rec.storedAt)) rec.storedAt = created;
      const spec = s.data?.[DATA_SPEC];
      if (spec && !rec.spec) rec.spec = JSON.parse(Buffer.from(spec, 'base64').toString('utf8')) as RevisionSpec;
      byNumber.set(n, rec);
    }
    return [...byNumber.values()].sort((a, b) => a.number - b.number);
  }

  /**
   * True when every chunk of this revision is known to be stored, from the index alone (no
   * request); false when it is not, or without a synced index. A revision stored by an earlier
   * reconcile (a phase waiting for the ones before it, a restart) need not be stored again.
   */
  isStored(bdName: string, rev: { number: number; contentDigest: string }): boolean {
    const secrets = this.index?.secretsOf(bdName);
    if (!secrets) return false;
    const chunks = new Set<number>();
    let count = -1;
    for (const s of secrets) {
      if (s.labels[LABEL_REVISION] !== String(rev.number) || s.annotations[ANNOTATION_DIGEST] !== rev.contentDigest) continue;
      const [i, n] = (s.annotations[ANNOTATION_CHUNK] ?? '').split('/').map(Number);
      if (!Number.isInteger(i) || !Number.isInteger(n) || (count >= 0 && n !== count)) return false;
      count = n!;
      chunks.add(i!);
    }
    return count > 0 && chunks.size === count;
  }

  /** the stored revision produced by these inputs, if any */
  async findByInputs(bdName: string, inputs: string): Promise<RevisionRecord | undefined> {
    const label = inputs.slice(0, 63);
    const indexed = this.index?.secretsOf(bdName);
    const s = indexed
      ? indexed.find((x) => x.labels[LABEL_INPUTS] === label)
      : (
          await this.client.list<SecretObject>(SECRET, {
            namespace: this.namespace,
            labelSelector: `${LABEL_REVISION_OF}=${bdName},${LABEL_COMPONENT}=revision,${LABEL_INPUTS}=${label}`,
          })
        ).items[0]?.metadata;
    const n = Number(s?.labels?.[LABEL_REVISION]);
    const d = s?.annotations?.[ANNOTATION_DIGEST];
    return s && Number.isInteger(n) && d ? { number: n, contentDigest: d, inputs } : undefined;
  }

  /** the objects of a stored revision, or undefined when it is not (completely) stored */
  async load(bdName: string, rev: RevisionRecord): Promise<KubeObject[] | undefined> {
    const secrets = await this.secrets(bdName, rev);
    const parts = new Map<number, Buffer>();
    let count = -1;
    for (const s of secrets) {
      if (s.metadata.annotations?.[ANNOTATION_DIGEST] !== rev.contentDigest) continue;
      const [i, n] = (s.metadata.annotations?.[ANNOTATION_CHUNK] ?? '').split('/').map(Number);
      if (i === undefined || n === undefined || !s.data?.objects) continue;
      count = n;
      parts.set(i, Buffer.from(s.data.objects, 'base64'));
    }
    if (count < 0 || parts.size !== count) return undefined;
    const packed = Buffer.concat([...Array(count).keys()].map((i) => parts.get(i)!));
    return JSON.parse((await gunzipAsync(packed)).toString('utf8')) as KubeObject[];
  }

  /** deletes the stored revisions of a BD whose numbers are not in `keep` (all when omitted) */
  async prune(bdName: string, keep?: ReadonlySet<number>): Promise<number> {
    const secrets = this.index?.secretsOf(bdName) ?? (await this.secrets(bdName)).map((s) => s.metadata);
    const doomed = secrets.filter((s) => !keep?.has(Number(s.labels?.[LABEL_REVISION])));
    // delete() tolerates NotFound: the index may still list a Secret deleted a moment ago
    await Promise.all(
      doomed.map(async (s) => {
        await this.client.delete(SECRET, s.name, this.namespace);
        this.index?.removed(bdName, s.name);
      }),
    );
    return doomed.length;
  }

  private async secrets(bdName: string, rev?: RevisionRecord): Promise<SecretObject[]> {
    let selector = `${LABEL_REVISION_OF}=${bdName},${LABEL_COMPONENT}=revision`;
    if (rev) selector += `,${LABEL_REVISION}=${rev.number},${LABEL_CONTENT}=${contentLabel(rev.contentDigest)}`;
    const res = await this.client.list<SecretObject>(SECRET, { namespace: this.namespace, labelSelector: selector });
    return res.items;
  }
}
