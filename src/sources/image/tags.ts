/**
 * A repository's tags (`GET /v2/<name>/tags/list`, distribution spec), for `image.semver`: every
 * page the registry links to with `Link: <…>; rel="next"`, through the client's authentication,
 * retries and transport. Bounded: each page at most 4 MiB, at most 100 pages and 100 000 tags (a
 * larger repository is `too-many-tags`, terminal: the range cannot be decided over part of it).
 * A next link must stay on the registry's origin (credentials go nowhere else).
 */
import type { OperationContext, RegistryClient } from './client.ts';
import { SourceCode } from '../errors.ts';
import { imageError } from './errors.ts';
import { formatReference, type ImageReference } from './reference.ts';

export interface TagListLimits {
  /** tags asked for per page (`?n=`); registries may send fewer */
  pageSize: number;
  maxPageBytes: number;
  maxPages: number;
  maxTags: number;
}

export const DEFAULT_TAG_LIST_LIMITS: TagListLimits = { pageSize: 1000, maxPageBytes: 4 * 1024 * 1024, maxPages: 100, maxTags: 100_000 };

/** the `rel="next"` target of a Link header, if any */
export function nextLink(link: string | string[] | undefined): string | undefined {
  for (const value of Array.isArray(link) ? link : link ? [link] : []) {
    for (const part of value.split(',')) {
      const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
      if (m && /(^|;)\s*rel="?next"?\s*(;|$)/.test(m[2]!)) return m[1];
    }
  }
  return undefined;
}

export async function listTags(
  client: RegistryClient,
  ref: ImageReference,
  ctx: OperationContext,
  limits: TagListLimits = DEFAULT_TAG_LIST_LIMITS,
): Promise<string[]> {
  const subject = formatReference(ref);
  const origin = `${client.schemeFor(ref.apiHost)}://${ref.apiHost}`;
  const tags: string[] = [];
  let path: string | undefined = `/v2/${ref.repository}/tags/list?n=${limits.pageSize}`;
  for (let page = 0; path !== undefined; page++) {
    if (page >= limits.maxPages)
      throw imageError(ctx.stage, SourceCode.TooManyTags, `the repository lists more than ${limits.maxPages} pages of tags`, subject, true);
    const res = await client.request(ref, { method: 'GET', path, headers: { accept: 'application/json' }, scope: 'pull' }, ctx);
    if (res.statusCode < 200 || res.statusCode >= 300) await res.body.dump();
    client.check(res, ref, ctx, 'tag list');
    const body = await readCapped(res.body, limits.maxPageBytes, () =>
      imageError(ctx.stage, SourceCode.TooManyTags, `a page of the tag list is larger than ${limits.maxPageBytes} bytes`, subject, true),
    );
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch {
      throw imageError(ctx.stage, SourceCode.InvalidTagList, 'the tag list is not JSON', subject, true);
    }
    const list = (doc as { tags?: unknown } | null)?.tags;
    if (list !== null && list !== undefined && !Array.isArray(list))
      throw imageError(ctx.stage, SourceCode.InvalidTagList, 'the tag list has no tags array', subject, true);
    for (const t of list ?? []) if (typeof t === 'string') tags.push(t);
    if (tags.length > limits.maxTags) throw imageError(ctx.stage, SourceCode.TooManyTags, `the repository has more than ${limits.maxTags} tags`, subject, true);
    const next = nextLink(res.headers.link);
    if (next === undefined) break;
    const url = new URL(next, origin);
    if (url.origin !== origin) throw imageError(ctx.stage, SourceCode.InvalidTagList, `the tag list links to another origin (${url.origin})`, subject, true);
    path = `${url.pathname}${url.search}`;
  }
  return tags;
}

async function readCapped(body: AsyncIterable<Buffer>, max: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > max) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, n);
}
