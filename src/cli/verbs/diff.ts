/**
 * `hoist diff -f bd.yaml`: what the controller would change if this BundleDeployment were
 * applied, like `kubectl diff`. Renders the content as `hoist render` does (previewBundle, the controller's renderBundle), then
 * plans the apply against the cluster (diff-plan.ts: collision verdicts and a server-side
 * dry-run apply as Hoist's field manager) and prints a unified diff per object that would change,
 * be created or be pruned, then a summary on stderr — after the apply phases and the Helm hooks
 * the change would run (diff-outline.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { parseCapabilityFlags } from '../capabilities.ts';
import { previewBundle } from '../render.ts';
import { connect, CONNECTION_OPTIONS, NAMESPACE_OPTION, parse, runVerb, UsageError, type Io } from './common.ts';
import { splitHooks } from '../../apply/hooks.ts';
import { outline } from './diff-outline.ts';
import { planDiff, type DiffEntry } from './diff-plan.ts';

const execFileAsync = promisify(execFile);

/** kubectl diff's exit codes */
export const DIFF_NONE = 0;
export const DIFF_FOUND = 1;
export const DIFF_ERROR = 2;

export const DIFF_HELP = `usage: hoist diff -f <bundledeployment.yaml> [--dir <local tree>] [-n controller-namespace] [--kubeconfig file]

Show what the controller would change if this BundleDeployment were applied, like kubectl diff:
renders its content as \`hoist render\` does, then for each object asks the API server for a
server-side dry-run apply as Hoist's field manager (hoist-<lineage>, forced), with Hoist's
ownership labels and its collision protection verdict. Prints a unified diff per object that
would be created or changed (server fields, status and the core.rukpak.io/revision annotation
left out), the objects of the active revision the new content lacks (pruned after a
successful apply; CRDs and objects no longer owned are kept), and objects collision protection
would refuse (the controller would then change nothing). A summary goes to stderr. The dry-run
runs with your credentials, not the BundleDeployment's serviceAccount; fields hand edits added
(kubectl edit/patch) that the controller would take over and remove still show as kept.
Before the diffs, stderr lists the apply phases of the new content (each applied once the ones
before it are ready) and the Helm hooks the change would run (pre/post install, or upgrade when
the BundleDeployment is installed), in the order the controller runs them.

  -f, --file <file>        the BundleDeployment (required)
  --dir <dir>              render this local tree instead of fetching the sources
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config
  --kube-version <v>       render with this Kubernetes version (helm's .Capabilities.KubeVersion)
                           instead of the cluster's, as helm template's flag
  --api-versions <g/v>     (repeatable, or comma-separated) group/versions helm sees as served
                           besides the cluster's, e.g. of CRDs not installed yet

exit codes: 0 no differences; 1 differences (or a refusal); 2 error (usage, render, API)
`;

const SYMBOL: Record<DiffEntry['action'], string> = { create: 'created', configure: 'configured', unchanged: 'unchanged', prune: 'pruned', orphan: 'kept (left the bundle)', refuse: 'refused' };

/** `diff -u` of two texts, labelled like kubectl diff's live and merged files; "" when equal */
async function unified(dir: string, label: string, live: string, merged: string): Promise<string> {
  const a = join(dir, 'live');
  const b = join(dir, 'merged');
  await Promise.all([writeFile(a, live), writeFile(b, merged)]);
  try {
    await execFileAsync('diff', ['-u', '-N', '--label', `live/${label}`, '--label', `hoist/${label}`, a, b], { maxBuffer: 64 * 1024 * 1024 });
    return '';
  } catch (e) {
    const r = e as { code?: number; stdout?: string };
    if (r.code === 1 && typeof r.stdout === 'string') return r.stdout;
    throw e;
  }
}

/** a flag's bad value is a usage error */
function usage<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function summary(entries: readonly DiffEntry[]): string {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(SYMBOL[e.action], (counts.get(SYMBOL[e.action]) ?? 0) + 1);
  const lines = [`${[...counts].map(([k, n]) => `${n} ${k}`).join(', ')}`];
  for (const e of entries) {
    if (e.takeOver) lines.push(`  ${e.subject}: would be taken over (${e.takeOver})`);
    if (e.action === 'refuse' || e.action === 'orphan' || e.note) lines.push(`  ${e.subject}: ${SYMBOL[e.action]}${e.note ? `: ${e.note}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

export async function diff(args: string[], io: Io): Promise<number> {
  return runVerb(
    'diff',
    DIFF_HELP,
    io,
    async () => {
      const { values, positionals } = parse(args, {
        ...CONNECTION_OPTIONS,
        ...NAMESPACE_OPTION,
        file: { type: 'string', short: 'f' },
        dir: { type: 'string' },
        'kube-version': { type: 'string' },
        'api-versions': { type: 'string', multiple: true },
      });
      if (values.help) {
        io.out(DIFF_HELP);
        return DIFF_NONE;
      }
      if (!values.file) throw new UsageError('-f <bundledeployment.yaml> is required');
      if (positionals.length > 0) throw new UsageError('diff takes no positional arguments');
      const capabilities = usage(() => parseCapabilityFlags(values['kube-version'], values['api-versions']));
      const docs = parseAllDocuments(await readFile(values.file, 'utf8')).map((d) => d.toJS() as BundleDeployment | null);
      const bd = docs.find((d) => d?.kind === 'BundleDeployment');
      if (!bd) throw new Error(`${values.file} holds no BundleDeployment`);
      const client = connect(values.kubeconfig);
      const tmp = await mkdtemp(join(tmpdir(), 'hoist-diff-'));
      try {
        // the controller's own render path: same objects, namespaces and content digest
        const out = await previewBundle(bd, { client, capabilities, controllerNamespace: values.namespace, ...(values.dir ? { dir: values.dir } : {}) });
        if (out.assumed) io.err(`${out.assumed}\n`);
        for (const w of out.warnings) io.err(`warning: ${w}\n`);
        // hooks are run, not applied: they are announced, never diffed as managed objects
        const { managed, hooks } = splitHooks(out.objects);
        const installed = (await client.get({ apiVersion: bd.apiVersion, kind: bd.kind }, bd.metadata.name).catch(() => undefined)) as unknown as BundleDeployment | undefined;
        io.err(outline(managed, hooks, installed?.status?.activeRevision ? 'upgrade' : 'install'));
        const entries = await planDiff(client, { bd, objects: managed, contentDigest: out.contentDigest, controllerNamespace: values.namespace });
        let found = false;
        for (const e of entries) {
          if (e.action === 'unchanged' || e.action === 'orphan') continue;
          found = true;
          if (e.action === 'refuse') continue;
          io.out(await unified(tmp, e.subject.replaceAll(' ', '/'), e.live, e.merged));
        }
        io.err(summary(entries));
        return found ? DIFF_FOUND : DIFF_NONE;
      } finally {
        await rm(tmp, { recursive: true, force: true });
        await client.close();
      }
    },
    DIFF_ERROR,
  );
}
