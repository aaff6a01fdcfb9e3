/**
 * `hoist rollback NAME --to REVISION`: rolling back by spec (DESIGN §3). The revision store keeps,
 * with each revision, the spec fields that produced it (format, installNamespace, config, and
 * the sources pinned to what they resolved to). Setting them again gives the controller the
 * same inputs, so it finds the stored revision by its inputs hash and re-applies its objects:
 * no fetch, no render, and the revision keeps its number. Refuses before changing anything when
 * the revision (or the spec that produced it) is not stored.
 */
import { isDeepStrictEqual } from 'node:util';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { RevisionStore, type RevisionSpec } from '../../revisions/revision-store.ts';
import { BD_TYPE, connect, CONNECTION_OPTIONS, EXIT_OK, NAMESPACE_OPTION, oneName, parse, readBD, runVerb, UsageError, type Io } from './common.ts';

export const ROLLBACK_HELP = `usage: hoist rollback NAME --to REVISION [-n controller-namespace] [--kubeconfig file]

Roll a BundleDeployment back to a stored revision (see \`hoist history NAME\`), by spec: sets
spec.format, spec.installNamespace, spec.config and spec.sources to what produced that revision,
each source pinned (image digest, git commit, http sha256). The controller then re-applies the
stored objects: nothing is fetched or rendered, and the revision keeps its number. Objects of the
current revision that revision lacks are pruned as on any upgrade. A paused BundleDeployment
rolls back when resumed.

  --to <n>                 the revision number
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 spec set (or already that revision's); 1 not found, the revision or the spec that
produced it is not stored, or the API server refused; 2 usage error
`;

const FIELDS = ['format', 'installNamespace', 'config', 'sources'] as const;

/** JSON patch ops turning `bd`'s spec fields into `target`'s, guarded by the resourceVersion read */
export function rollbackPatch(bd: BundleDeployment, target: RevisionSpec): unknown[] {
  const ops: unknown[] = [{ op: 'test', path: '/metadata/resourceVersion', value: bd.metadata.resourceVersion }];
  for (const f of FIELDS) {
    const want = target[f];
    const have = bd.spec[f];
    if (isDeepStrictEqual(want, have)) continue;
    // "add" replaces a whole member (a merge patch would merge config maps instead)
    if (want === undefined) ops.push({ op: 'remove', path: `/spec/${f}` });
    else ops.push({ op: 'add', path: `/spec/${f}`, value: want });
  }
  return ops;
}

export async function rollback(args: string[], io: Io): Promise<number> {
  return runVerb('rollback', ROLLBACK_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, ...NAMESPACE_OPTION, to: { type: 'string' } });
    if (values.help) {
      io.out(ROLLBACK_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'rollback');
    const to = Number(values.to);
    if (values.to === undefined || !Number.isInteger(to) || to < 1) throw new UsageError('--to takes a revision number (see hoist history NAME)');
    const client = connect(values.kubeconfig);
    try {
      const bd = await readBD(client, name);
      const store = new RevisionStore(client, values.namespace);
      const stored = await store.list(name);
      const rev = stored.find((r) => r.number === to);
      if (!rev) {
        const have = stored.map((r) => r.number).join(', ') || 'none';
        throw new Error(`revision ${to} of ${name} is not stored in namespace ${values.namespace} (stored: ${have}); nothing changed`);
      }
      if (!rev.spec)
        throw new Error(
          `revision ${to} of ${name} was stored without the spec that produced it (by an older Hoist); nothing changed: set spec.sources to its sources by hand`,
        );
      // the objects must be there to re-apply: a rollback never fetches
      if (!(await store.load(name, rev))) throw new Error(`revision ${to} of ${name} is only partly stored (a chunk Secret is missing); nothing changed`);
      const ops = rollbackPatch(bd, rev.spec);
      if (ops.length === 1) {
        io.out(`bundledeployment ${name} already names revision ${to}'s content\n`);
        return EXIT_OK;
      }
      await client.patch(BD_TYPE, name, undefined, ops, 'json', { fieldManager: 'hoist-cli' });
      io.out(
        `bundledeployment ${name} rolled back to revision ${to} (${rev.contentDigest})${bd.spec.paused ? '; it is paused: the controller applies it on hoist resume' : ''}\n`,
      );
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
