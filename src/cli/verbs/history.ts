/**
 * `hoist history NAME`: the BundleDeployment's revisions: number, phase (from status), content
 * digest, the sources that produced it (pinned: image digest, git commit, http sha256) and when
 * it was stored, and the Helm hooks it ran — from the revision store in the controller's namespace, joined with
 * status.revisions. Read-only.
 */
import { stringify } from 'yaml';
import type { BundleDeploymentStatus, HookRun, RevisionStatus, SourceSpec } from '../../../api/v1alpha2/types.ts';
import { RevisionStore, type RevisionRecord } from '../../revisions/revision-store.ts';
import { age, connect, CONNECTION_OPTIONS, EXIT_OK, NAMESPACE_OPTION, oneName, parse, readBD, runVerb, table, UsageError, type Io } from './common.ts';

export const HISTORY_HELP = `usage: hoist history NAME [-o yaml|json] [-n controller-namespace] [--kubeconfig file]

The revisions of a BundleDeployment, oldest first: REVISION, PHASE (Active, Superseded, Failed,
or Stored when only the revision store still has it), DIGEST (content digest), STORED (age),
SOURCES (each source pinned to what it resolved to), and HOOKS when a revision ran Helm hooks
(event, kind, name, how it ended). Revisions whose objects are stored can be
rolled back to with \`hoist rollback NAME --to REVISION\`. For a BundleDeployment with
spec.kubeConfig, stderr names the remote cluster it installs into (status.target); its revisions
are stored on the management cluster like any other's, so nothing is read from the remote.

  -o, --output <fmt>       yaml or json (full digests and source specs, storedAt, and the
                           active revision's appliedAt and object count)
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 listed; 1 not found or the API server failed; 2 usage error
`;

export interface HistoryEntry {
  revision: number;
  phase: RevisionStatus['phase'] | 'Stored';
  contentDigest: string;
  objects?: number;
  storedAt?: string;
  /** the active revision only: when its objects were applied (status.activeRevision.appliedAt) */
  appliedAt?: string;
  /** the spec's sources pinned to their resolution; absent for revisions stored by an older Hoist */
  sources?: SourceSpec[];
  /** whether `hoist rollback` can name it (its producing spec is stored) */
  rollback: boolean;
  /** the Helm hooks its install, upgrade or rollback ran, and how each ended */
  hooks?: HookRun[];
}

/** "pre-upgrade Job migrate Succeeded (deleted)" per hook run, for the HOOKS column */
export function describeHooks(hooks: readonly HookRun[] | undefined): string {
  if (!hooks?.length) return '';
  return hooks.map((h) => `${h.event} ${h.kind} ${h.name} ${h.result}${h.deleted ? ' (deleted)' : ''}`).join(', ');
}

/** one line per source: kind and the pinned identity */
export function describeSource(src: SourceSpec): string {
  if (src.image) return `image ${src.image.ref}`;
  if (src.git)
    return `git ${src.git.repository}${src.git.directory ? `//${src.git.directory}` : ''}@${src.git.ref.commit ?? src.git.ref.tag ?? src.git.ref.branch}`;
  if (src.http) return `http ${src.http.url}${src.http.sha256 ? ` sha256:${src.http.sha256.slice(0, 12)}` : ''}`;
  if (src.helm)
    return `helm ${src.helm.repoURL} ${src.helm.chart}${src.helm.version ? `@${src.helm.version}` : ''}${src.helm.sha256 ? ` sha256:${src.helm.sha256.slice(0, 12)}` : ''}`;
  return src.kind;
}

export function historyEntries(stored: readonly RevisionRecord[], status: BundleDeploymentStatus | undefined): HistoryEntry[] {
  const byNumber = new Map<number, HistoryEntry>();
  for (const r of stored) {
    byNumber.set(r.number, {
      revision: r.number,
      phase: 'Stored',
      contentDigest: r.contentDigest,
      ...(r.storedAt ? { storedAt: r.storedAt } : {}),
      ...(r.spec ? { sources: r.spec.sources } : {}),
      rollback: !!r.spec,
    });
  }
  for (const s of status?.revisions ?? []) {
    const e = byNumber.get(s.number) ?? { revision: s.number, phase: s.phase, contentDigest: s.contentDigest, rollback: false };
    const active = status?.activeRevision?.number === s.number ? status.activeRevision : undefined;
    byNumber.set(s.number, {
      ...e,
      phase: s.phase,
      ...(active?.objects !== undefined ? { objects: active.objects } : {}),
      ...(active?.appliedAt ? { appliedAt: active.appliedAt } : {}),
      ...(s.hooks?.length ? { hooks: s.hooks } : {}),
    });
  }
  // a transition under way: its hooks so far
  const t = status?.transition;
  const current = t ? byNumber.get(t.revision) : undefined;
  if (t?.hooks?.length && current) byNumber.set(t.revision, { ...current, hooks: t.hooks });
  return [...byNumber.values()].sort((a, b) => a.revision - b.revision);
}

export async function history(args: string[], io: Io): Promise<number> {
  return runVerb('history', HISTORY_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, ...NAMESPACE_OPTION, output: { type: 'string', short: 'o' } });
    if (values.help) {
      io.out(HISTORY_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'history');
    if (values.output && !['yaml', 'json'].includes(values.output))
      throw new UsageError(`unknown output format ${JSON.stringify(values.output)} (yaml or json)`);
    const client = connect(values.kubeconfig);
    try {
      const bd = await readBD(client, name);
      const entries = historyEntries(await new RevisionStore(client, values.namespace).list(name), bd.status);
      const target = bd.status?.target;
      if (target) io.err(`bundledeployment ${name} installs into cluster ${target.cluster} (kubeconfig secret ${target.kubeConfigSecret})\n`);
      if (values.output === 'json') io.out(`${JSON.stringify(entries, null, 2)}\n`);
      else if (values.output === 'yaml') io.out(stringify(entries, { lineWidth: 0 }));
      else if (entries.length === 0) io.err(`bundledeployment ${name} has no revisions yet\n`);
      else {
        const now = new Date();
        const withHooks = entries.some((e) => e.hooks?.length);
        const rows = entries.map((e) => [
          String(e.revision),
          e.phase,
          e.contentDigest.replace(/^sha256:/, '').slice(0, 12),
          e.storedAt ? age(e.storedAt, now) : '<not stored>',
          e.sources ? e.sources.map(describeSource).join(', ') : '<not recorded>',
          ...(withHooks ? [describeHooks(e.hooks) || '<none>'] : []),
        ]);
        io.out(table([['REVISION', 'PHASE', 'DIGEST', 'STORED', 'SOURCES', ...(withHooks ? ['HOOKS'] : [])], ...rows]));
      }
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
