/**
 * What a verified delivery asks for: the repository (every URL the forge names it by) and the
 * branch pushed. Pure. A delivery that is not a branch push (GitHub's ping, a tag push, GitLab's
 * other hooks) yields `undefined`: it is acknowledged like any other and re-resolves nothing.
 */
export interface PushEvent {
  repositories: string[];
  branch: string;
}

export type Provider = 'github' | 'gitlab' | 'generic';

const BRANCH_PREFIX = 'refs/heads/';

function record(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const strings = (...vs: unknown[]): string[] => vs.filter((v): v is string => typeof v === 'string' && v !== '');

function branchOf(ref: unknown): string | undefined {
  return typeof ref === 'string' && ref.startsWith(BRANCH_PREFIX) && ref.length > BRANCH_PREFIX.length ? ref.slice(BRANCH_PREFIX.length) : undefined;
}

/**
 * Parses a provider's payload. `event` is the event header (X-GitHub-Event / X-Gitlab-Event);
 * throws SyntaxError on a body that is not JSON.
 */
export function parsePush(provider: Provider, event: string | undefined, body: Buffer): PushEvent | undefined {
  const json = record(JSON.parse(body.toString('utf8')));
  if (!json) return undefined;
  switch (provider) {
    case 'github': {
      if (event !== 'push' || json.deleted === true) return undefined;
      const repo = record(json.repository);
      const branch = branchOf(json.ref);
      return repo && branch ? done(strings(repo.clone_url, repo.html_url, repo.url), branch) : undefined;
    }
    case 'gitlab': {
      if (event !== 'Push Hook') return undefined;
      const project = record(json.project);
      const repo = record(json.repository);
      const branch = branchOf(json.ref);
      return branch ? done(strings(project?.git_http_url, project?.web_url, repo?.git_http_url, repo?.homepage), branch) : undefined;
    }
    case 'generic': {
      const branch = typeof json.branch === 'string' && json.branch !== '' ? json.branch : undefined;
      return branch ? done(strings(json.url), branch) : undefined;
    }
  }
}

function done(repositories: string[], branch: string): PushEvent | undefined {
  return repositories.length ? { repositories: [...new Set(repositories)], branch } : undefined;
}
