/**
 * `hoist get [NAME]`: BundleDeployments as a table like `kubectl get bundledeployments`, with
 * the status contract's done signal as a column, or as YAML/JSON (`-o`). Read-only.
 */
import { stringify } from 'yaml';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { dependencyVerdicts } from '../../reconciler/dependencies.ts';
import { age, BD_TYPE, condition, connect, CONNECTION_OPTIONS, EXIT_OK, isDone, parse, readBD, runVerb, table, UsageError, type Io } from './common.ts';

export const GET_HELP = `usage: hoist get [NAME] [-o wide|name|yaml|json] [-l selector] [--kubeconfig file]

List BundleDeployments (all, or NAME) like \`kubectl get bundledeployments\`:
  NAME, FORMAT, REVISION (active revision number), INSTALLED (reason of Installed),
  HEALTHY (status of Healthy), PROGRESSING (reason of Progressing), PAUSED,
  DONE (the status contract's done signal: Installed=True and Progressing=False at the
  current generation; docs/status.md), AGE. -o wide adds the active content digest, TARGET
  (the remote cluster's API server host with spec.kubeConfig, "local" without) and
  DEPENDS: each spec.dependsOn entry and its state now (ready, not found, paused, failed,
  being deleted, not done yet, readyExpr false; the controller's verdict is in PROGRESSING,
  DependencyNotReady while a new revision waits).

  -o, --output <fmt>    wide; name (one name a line); yaml or json (as the API server returns them)
  -l, --selector <sel>  label selector (without NAME)
  --kubeconfig <file>   default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 listed; 1 not found or the API server failed; 2 usage error
`;

/** where bd installs: its remote cluster's API server host (status.target), "<pending>" before it is known, "local" without spec.kubeConfig */
export function targetColumn(bd: BundleDeployment): string {
  if (!bd.spec.kubeConfig) return 'local';
  return bd.status?.target?.cluster ?? '<pending>';
}

/** "crds=ready,operator=failed": each dependency and its state now, as the controller judges it (src/reconciler/dependencies.ts) */
export function dependsColumn(bd: BundleDeployment, lookup: (name: string) => BundleDeployment | undefined): string {
  const refs = bd.spec.dependsOn ?? [];
  if (refs.length === 0) return '<none>';
  try {
    return dependencyVerdicts(bd, refs, lookup)
      .map((v) => `${v.name}=${v.ready ? 'ready' : v.why?.startsWith('readyExpr') ? 'readyExpr false' : (v.why ?? 'not ready').replace(/ \(.*$/, '')}`)
      .join(',');
  } catch {
    return 'dependsOn invalid (see PROGRESSING)';
  }
}

export function getRow(bd: BundleDeployment, now: Date, wide = false, lookup: (name: string) => BundleDeployment | undefined = () => undefined): string[] {
  const row = [
    bd.metadata.name,
    bd.spec.format,
    bd.status?.activeRevision ? String(bd.status.activeRevision.number) : '<none>',
    condition(bd, 'Installed')?.reason ?? '',
    condition(bd, 'Healthy')?.status ?? '',
    condition(bd, 'Progressing')?.reason ?? '',
    String(bd.spec.paused === true),
    String(isDone(bd)),
    age(bd.metadata.creationTimestamp, now),
  ];
  if (wide) row.push(bd.status?.activeRevision?.contentDigest ?? '', targetColumn(bd), dependsColumn(bd, lookup));
  return row;
}

export const GET_HEADER = ['NAME', 'FORMAT', 'REVISION', 'INSTALLED', 'HEALTHY', 'PROGRESSING', 'PAUSED', 'DONE', 'AGE'];

export async function get(args: string[], io: Io): Promise<number> {
  return runVerb('get', GET_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, output: { type: 'string', short: 'o' }, selector: { type: 'string', short: 'l' } });
    if (values.help) {
      io.out(GET_HELP);
      return EXIT_OK;
    }
    if (positionals.length > 1) throw new UsageError('get takes at most one NAME');
    const output = values.output ?? 'table';
    if (!['table', 'wide', 'name', 'yaml', 'json'].includes(output))
      throw new UsageError(`unknown output format ${JSON.stringify(output)} (wide, name, yaml or json)`);
    if (positionals.length === 1 && values.selector) throw new UsageError('NAME and --selector exclude each other');
    const client = connect(values.kubeconfig);
    try {
      const name = positionals[0];
      const items: BundleDeployment[] = name
        ? [await readBD(client, name)]
        : ((await client.list(BD_TYPE, values.selector ? { labelSelector: values.selector } : {})).items as unknown as BundleDeployment[]).sort((a, b) =>
            a.metadata.name.localeCompare(b.metadata.name),
          );
      if (output === 'json') io.out(`${JSON.stringify(name ? items[0] : { apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`);
      else if (output === 'yaml') io.out(stringify(name ? items[0] : { apiVersion: 'v1', kind: 'List', items }, { lineWidth: 0 }));
      else if (output === 'name') io.out(items.map((bd) => `${bd.metadata.name}\n`).join(''));
      else if (items.length === 0) io.err('No resources found\n');
      else {
        const now = new Date();
        const wide = output === 'wide';
        const known = new Map(items.map((bd) => [bd.metadata.name, bd]));
        // one NAME: its dependencies are read too (a missing one stays missing)
        if (wide && name)
          for (const d of items[0]?.spec.dependsOn ?? [])
            if (!known.has(d.name)) await client.get(BD_TYPE, d.name).then((o) => o && known.set(d.name, o as unknown as BundleDeployment));
        io.out(table([wide ? [...GET_HEADER, 'DIGEST', 'TARGET', 'DEPENDS'] : GET_HEADER, ...items.map((bd) => getRow(bd, now, wide, (n) => known.get(n)))]));
      }
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
