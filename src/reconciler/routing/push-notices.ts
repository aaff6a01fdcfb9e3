/**
 * Pushes announced by a verified webhook (src/webhook): which BundleDeployments follow the pushed
 * repository and branch, marked "pushed" until their next resolve takes the mark and re-checks
 * their floating sources at once, whatever `pollInterval` says (as SecretWatch.takeRotated does
 * for a rotated credential). Repositories compare by `normalizeRepoUrl`; a source pinned to a
 * commit or following a tag never matches a branch push.
 */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { normalizeRepoUrl } from '../../util/repo-url.ts';

export class PushNotices {
  private readonly pushed = new Set<string>();

  constructor(
    private readonly bundleDeployments: () => readonly BundleDeployment[],
    private readonly enqueue: (name: string) => void,
  ) {}

  /** marks and re-queues every BD with a git source on one of `repositories` at `branch`; returns how many */
  notify(repositories: readonly string[], branch: string): number {
    const wanted = new Set(repositories.map(normalizeRepoUrl));
    let matched = 0;
    for (const bd of this.bundleDeployments()) {
      const follows = bd.spec.sources.some((s) => s.git && s.git.ref.branch === branch && wanted.has(normalizeRepoUrl(s.git.repository)));
      if (!follows) continue;
      this.pushed.add(bd.metadata.name);
      this.enqueue(bd.metadata.name);
      matched++;
    }
    return matched;
  }

  /** whether a push touched the BD since its last resolve; clears the mark */
  takePushed(name: string): boolean {
    return this.pushed.delete(name);
  }

  forget(name: string): void {
    this.pushed.delete(name);
  }
}
