/**
 * The budget of the containment check (src/util/content-tree.ts, issue 23): links resolved per
 * tree, hops per chain, and the operation's abort signal. Asserted by counts, never by time.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_LINK_HOPS, DEFAULT_MAX_LINKS, MAX_SYMLINK_HOPS, verifyTree } from '../../../src/util/content-tree.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { failure } from '../../support/failure.ts';

let root: string;
const ctx = { stage: 'fetch' as const, who: 'git test' };

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-ct-budget-'));
  await mkdir(join(root, 'sub'));
  await writeFile(join(root, 'cm.yaml'), 'kind: ConfigMap\n');
  // 30 links, each a chain of 3 hops to cm.yaml
  await symlink('cm.yaml', join(root, 'a'));
  await symlink('a', join(root, 'b'));
  for (let i = 0; i < 30; i++) await symlink('../b', join(root, 'sub', `l${String(i).padStart(2, '0')}`));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('verifyTree budget', () => {
  it('refuses more links than maxLinks per tree, naming the limit and where it was passed', async () => {
    const e = await failure(verifyTree(root, { ...ctx, maxLinks: 10 }));
    expect(e).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'too-many-links', subject: 'sub/l08', terminal: true });
    expect(e.message).toBe('git test: more than 10 symlinks in the content tree (the limit per tree), at "sub/l08"');
    // within the budget: every link resolves
    expect(await verifyTree(root, { ...ctx, maxLinks: 32 })).toMatchObject({ symlinks: 32, files: 1 });
    expect(DEFAULT_MAX_LINKS).toBe(10_000);
  });

  it('refuses a chain longer than the hops per chain', async () => {
    let prev = 'cm.yaml';
    for (let i = 0; i <= MAX_SYMLINK_HOPS; i++) {
      await symlink(prev, join(root, `c${i}`));
      prev = `c${i}`;
    }
    const e = await failure(verifyTree(root, ctx));
    expect(e).toMatchObject({ code: 'symlink-escape', subject: `c${MAX_SYMLINK_HOPS}` });
    expect(e.message).toContain('has more than 40 levels of links (the limit per chain: a loop, or a chain too long)');
  });

  it('refuses more link hops over all chains than maxLinkHops per tree, at once, naming the limit', async () => {
    // a: 1 hop, b: 2, each sub/lNN: 3 (../b -> a -> cm.yaml): 93 in all
    expect(await verifyTree(root, { ...ctx, maxLinkHops: 93 })).toMatchObject({ symlinks: 32 });
    const e = await failure(verifyTree(root, { ...ctx, maxLinkHops: 92 }));
    expect(e).toMatchObject({ stage: 'fetch', code: 'too-many-links', subject: 'sub/l29', terminal: true });
    expect(e.message).toBe(
      'git test: resolving the symlinks of the content tree took more than 92 link hops (the limit per tree: chains too long or too many), at "sub/l29"',
    );
    // the walk stops there: no other link is listed after it
    const early = await failure(verifyTree(root, { ...ctx, maxLinkHops: 10 }));
    expect(early.subject).toBe('sub/l02');
    expect(early.message).not.toContain('other offending links');
    expect(DEFAULT_MAX_LINK_HOPS).toBe(2 * DEFAULT_MAX_LINKS);
  });

  it('checks the signal at every hop of a chain: fired mid-chain, resolving stops there', async () => {
    const reason = new Error('deadline');
    let checks = 0;
    // root dir (1), a: link (2) + hop (3), b: link (4) + hop (5) + hop (6): fires inside b's chain
    const signal = {
      throwIfAborted: () => {
        if (++checks >= 6) throw reason;
      },
    } as unknown as AbortSignal;
    await expect(verifyTree(root, { ...ctx, signal })).rejects.toBe(reason);
    expect(checks).toBe(6);
  });

  it('stops with the signal reason: no link is resolved after an abort', async () => {
    const reason = new HoistError('fetch exceeded its deadline of 10m', { stage: 'fetch', code: 'deadline-exceeded', terminal: false });
    const ctl = new AbortController();
    ctl.abort(reason);
    await expect(verifyTree(root, { ...ctx, signal: ctl.signal })).rejects.toBe(reason);
  });

  it('checks the signal before every directory and every link: fired mid-walk, the walk stops there', async () => {
    const reason = new Error('aborted');
    let checks = 0;
    // fires at the 5th check: root dir, a and its hop, b and its first hop
    const signal = {
      throwIfAborted: () => {
        if (++checks >= 5) throw reason;
      },
    } as unknown as AbortSignal;
    await expect(verifyTree(root, { ...ctx, signal })).rejects.toBe(reason);
    expect(checks).toBe(5);
  });
});
