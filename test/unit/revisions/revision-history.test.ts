import { describe, expect, it } from 'vitest';
import type { BundleDeployment, RevisionStatus } from '../../../api/v1alpha2/types.ts';
import { labelledNamesakes, lineageMembers, lineageWinner } from '../../../src/reconciler/lineage.ts';
import { MAX_HISTORY_STATUS, keptRevisions, lastGoodRevision, recordRevision, trimHistory } from '../../../src/revisions/revision-history.ts';

const rev = (number: number, phase: RevisionStatus['phase']): RevisionStatus => ({ number, contentDigest: `sha256:${number}`, phase });

describe('revision history', () => {
  it('a new Active revision supersedes the previous one; a re-recorded number replaces its entry', () => {
    const h = recordRevision([rev(1, 'Superseded'), rev(2, 'Active')], rev(3, 'Active'));
    expect(h.map((r) => `${r.number}:${r.phase}`)).toEqual(['1:Superseded', '2:Superseded', '3:Active']);
    expect(recordRevision(h, rev(3, 'Failed')).map((r) => `${r.number}:${r.phase}`)).toEqual(['1:Superseded', '2:Superseded', '3:Failed']);
  });

  it('keeps at most MAX_HISTORY_STATUS entries, newest last', () => {
    let h: RevisionStatus[] = [];
    for (let n = 1; n <= MAX_HISTORY_STATUS + 5; n++) h = recordRevision(h, rev(n, 'Active'));
    expect(h).toHaveLength(MAX_HISTORY_STATUS);
    expect(h.at(-1)).toMatchObject({ number: MAX_HISTORY_STATUS + 5, phase: 'Active' });
  });

  it('rolls back to the active revision, else to the newest revision that did not fail', () => {
    expect(lastGoodRevision({ activeRevision: { number: 4, contentDigest: 'sha256:4' } }, 'sha256:5')).toMatchObject({ number: 4 });
    const status = {
      activeRevision: { number: 5, contentDigest: 'sha256:5' },
      revisions: [rev(2, 'Superseded'), rev(3, 'Superseded'), rev(4, 'Failed'), rev(5, 'Active')],
    };
    expect(lastGoodRevision(status, 'sha256:5')).toMatchObject({ number: 3 });
    expect(lastGoodRevision({ activeRevision: { number: 1, contentDigest: 'sha256:1' } }, 'sha256:1')).toBeUndefined();
  });

  it('trims to the active revision plus the newest `limit` others', () => {
    const h = [rev(1, 'Superseded'), rev(2, 'Failed'), rev(3, 'Superseded'), rev(4, 'Active')];
    expect(trimHistory(h, 2).map((r) => r.number)).toEqual([2, 3, 4]);
    expect(trimHistory(h, 0).map((r) => r.number)).toEqual([4]);
  });

  it('keeps in the store what status lists, the active, the attempted and the transition revision', () => {
    const cases: Array<[string, Parameters<typeof keptRevisions>[0], number[]]> = [
      ['nothing', {}, []],
      ['the trimmed list', { revisions: [rev(3, 'Failed'), rev(4, 'Active')] }, [3, 4]],
      [
        'a failed attempt trimmed out of status (limit 0, Hold retries it)',
        {
          revisions: [rev(4, 'Active')],
          activeRevision: { number: 4, contentDigest: 'sha256:4' },
          attemptedRevision: { number: 7, contentDigest: 'sha256:7', reason: 'ApplyFailed', generation: 3 },
        },
        [4, 7],
      ],
      [
        'a revision applied phase by phase',
        { revisions: [rev(4, 'Active')], transition: { revision: 8, contentDigest: 'sha256:8', action: 'upgrade', startedAt: '2026-01-01T00:00:00Z' } },
        [4, 8],
      ],
    ];
    for (const [what, status, want] of cases)
      expect(
        [...keptRevisions(status)].sort((a, b) => a - b),
        what,
      ).toEqual(want);
  });
});

describe('lineage arbitration', () => {
  const bd = (name: string, created: string, extra: Partial<BundleDeployment['spec']> = {}, deleting = false): BundleDeployment => ({
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name, creationTimestamp: created, labels: { 'core.rukpak.io/lineage': 'op' }, ...(deleting ? { deletionTimestamp: created } : {}) },
    spec: { format: 'plain', sources: [], ...extra },
  });

  it('the newest unpaused, undeleted member applies; ties go to the name', () => {
    const v1 = bd('op-v1', '2026-01-01T00:00:00Z');
    const v2 = bd('op-v2', '2026-01-02T00:00:00Z');
    expect(lineageWinner(v1, [v1, v2])).toBe('op-v2');
    expect(lineageWinner(v1, [v1, bd('op-v2', '2026-01-02T00:00:00Z', { paused: true })])).toBe('op-v1');
    expect(lineageWinner(v1, [v1, bd('op-v2', '2026-01-02T00:00:00Z', {}, true)])).toBe('op-v1');
    expect(lineageWinner(v1, [v1, bd('op-a', '2026-01-01T00:00:00Z')])).toBe('op-v1');
    const other = { ...bd('x', '2026-03-01T00:00:00Z'), metadata: { name: 'x', creationTimestamp: '2026-03-01T00:00:00Z' } };
    expect(lineageWinner(v1, [v1, other])).toBe('op-v1');
  });

  // issue 23: the label is authorized by the tenancy policy (use on lineages.core.rukpak.io op), a name is not
  describe('an unlabelled BundleDeployment named after a labelled lineage', () => {
    const unlabelled = (name: string, created: string, extra: Partial<BundleDeployment['spec']> = {}): BundleDeployment => {
      const b = bd(name, created, extra);
      return { ...b, metadata: { name, creationTimestamp: created } };
    };
    const v1 = bd('op-v1', '2026-01-01T00:00:00Z');
    const squatter = unlabelled('op', '2026-02-01T00:00:00Z');
    const founder = unlabelled('op', '2025-12-01T00:00:00Z');

    it.each([
      // [what, the BD, the BDs of lineage "op", labelled namesakes, members that may act]
      ['a newer namesake of a labelled lineage', squatter, [v1, squatter], ['op-v1'], ['op-v1']],
      ['an older namesake (the lineage named after it), once a labelled member joins', founder, [founder, v1], ['op-v1'], ['op-v1']],
      [
        'a namesake of a lineage whose labelled member is paused',
        squatter,
        [bd('op-v1', '2026-01-01T00:00:00Z', { paused: true }), squatter],
        ['op-v1'],
        ['op-v1'],
      ],
      ['an unlabelled BundleDeployment alone in its lineage', squatter, [squatter], [], ['op']],
      ['a labelled member', v1, [v1, squatter], [], ['op-v1']],
    ] as const)('%s', (_what, subject, all, namesakes, members) => {
      expect(labelledNamesakes(subject, all)).toEqual(namesakes);
      expect(lineageMembers(all).map((m) => m.metadata.name)).toEqual(members);
    });

    it('never wins, nor freezes the labelled member (it used to, being newest)', () => {
      expect(lineageWinner(v1, [v1, squatter])).toBe('op-v1');
      const v2 = bd('op-v2', '2026-03-01T00:00:00Z');
      expect(lineageWinner(v1, [v1, squatter, v2])).toBe('op-v2');
      // alone, it is its own lineage, and applies
      expect(lineageWinner(squatter, [squatter])).toBe('op');
    });
  });
});
