import { describe, expect, it } from 'vitest';
import type { BundleDeployment, GitRef, SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { PushNotices } from '../../../../src/reconciler/routing/push-notices.ts';

const bd = (name: string, sources: SourceSpec[]): BundleDeployment => ({
  apiVersion: 'core.rukpak.io/v1alpha2',
  kind: 'BundleDeployment',
  metadata: { name },
  spec: { format: 'plain', sources },
});
const gitSrc = (repository: string, ref: GitRef): SourceSpec => ({ kind: 'git', git: { repository, ref } });

describe('PushNotices', () => {
  const all = [
    bd('main', [gitSrc('https://git.example/Team/App.git', { branch: 'main' })]),
    bd('main-too', [{ kind: 'http', http: { url: 'https://x/y.tgz' } }, gitSrc('HTTPS://GIT.EXAMPLE/Team/App/', { branch: 'main' })]),
    bd('release', [gitSrc('https://git.example/Team/App.git', { branch: 'release' })]),
    bd('pinned', [gitSrc('https://git.example/Team/App.git', { commit: 'a'.repeat(40) })]),
    bd('tag', [gitSrc('https://git.example/Team/App.git', { tag: 'main' })]),
    bd('other-repo', [gitSrc('https://git.example/Team/Other.git', { branch: 'main' })]),
  ];

  it('marks and re-queues only the BDs following that repository (normalised) and branch', () => {
    const queued: string[] = [];
    const p = new PushNotices(
      () => all,
      (n) => queued.push(n),
    );
    expect(p.notify(['https://git.example/Team/App'], 'main')).toBe(2);
    expect(queued).toEqual(['main', 'main-too']);
    expect(p.takePushed('main')).toBe(true);
    expect(p.takePushed('main')).toBe(false);
    expect(p.takePushed('release')).toBe(false);
    expect(p.takePushed('pinned')).toBe(false);
  });

  it('an unknown repository or branch marks nothing', () => {
    const queued: string[] = [];
    const p = new PushNotices(
      () => all,
      (n) => queued.push(n),
    );
    expect(p.notify(['https://git.example/Team/Unknown.git'], 'main')).toBe(0);
    expect(p.notify(['https://git.example/Team/App.git'], 'feature')).toBe(0);
    expect(queued).toEqual([]);
  });

  it('forget drops a pending mark', () => {
    const p = new PushNotices(
      () => all,
      () => undefined,
    );
    p.notify(['https://git.example/Team/App.git'], 'release');
    p.forget('release');
    expect(p.takePushed('release')).toBe(false);
  });
});
