/**
 * `hoist diff -f bd.yaml`: what the controller would change if this BundleDeployment were
 * applied, like `kubectl diff`. Renders the content as `hoist render` does (previewBundle, the
 * controller's renderBundle), previews the apply through the applier's own plan
 * (src/apply/preview.ts: revision number, collision verdicts, takeovers, driftIgnore, a
 * server-side dry-run as the BD's ServiceAccount, prune decisions) and prints a unified diff per
 * object that would change, be created or be pruned (diff-plan.ts), then a summary on stderr —
 * after the apply phases and the Helm hooks the change would run (diff-outline.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { DEFAULT_OVERRIDE_MANAGERS as DEFAULT_OVERRIDES } from '../../apply/field-managers.ts';
import { previewRevision } from '../../apply/preview.ts';
import { RevisionStore } from '../../revisions/revision-store.ts';
import { Identities } from '../../reconciler/identity.ts';
import { parseCapabilityFlags } from '../capabilities.ts';
import { previewBundle } from '../render.ts';
import { connection, CONNECTION_OPTIONS, NAMESPACE_OPTION, parse, runVerb, UsageError, type Io } from './common.ts';
import { outline } from './diff-outline.ts';
import { RESTRICTED_HELP, RESTRICTED_OPTION, targetCluster } from './remote.ts';
import { diffEntries, type DiffEntry } from './diff-plan.ts';
import { redact, redactionList } from '../../util/redact.ts';

const execFileAsync = promisify(execFile);

/** kubectl diff's exit codes */
export const DIFF_NONE = 0;
export const DIFF_FOUND = 1;
export const DIFF_ERROR = 2;

export const DIFF_HELP = `usage: hoist diff -f <bundledeployment.yaml> [--dir <local tree>] [-n controller-namespace] [--kubeconfig file]
                 [--default-service-account <name>] [--override-manager <name>]...

Show what the controller would change if this BundleDeployment were applied, like kubectl diff:
renders its content as \`hoist render\` does, then plans the apply the way the controller's applier
plans it (the revision number, Hoist's ownership labels, collision protection, spec.driftIgnore)
and for each object asks the API server for a server-side dry-run apply as Hoist's field manager
(hoist-<lineage>, forced), made as the BundleDeployment's serviceAccount (impersonated: your
credentials need the right to impersonate it) as the controller makes it. Fields hand edits set
(kubectl edit/patch/set...) are shown reverted, as the controller takes them over; fields
driftIgnore names are left as they are. Prints a unified diff per object that would be created or
changed (server fields, status and the core.rukpak.io/revision annotation left out), the objects
of the active revision the new content lacks (pruned after a successful apply; CRDs, namespaces
holding other objects and objects no longer owned are kept; objects annotated
helm.sh/resource-policy: keep or core.rukpak.io/prune: disabled are kept and shown losing Hoist's
owner label, no longer managed), and what the controller's apply would
meet as a refusal: collision protection, the serviceAccount's missing rights, the API server
refusing an object, an unsafe CRD change (then the controller would change nothing, or fail). A
summary goes to stderr. Before the diffs, stderr lists the revision number, the apply phases of
the new content (each applied once the ones before it are ready) and the Helm hooks the change
would run (pre/post install, or upgrade when the BundleDeployment is installed), in the order the
controller runs them. With spec.decryption, the SOPS-encrypted files are decrypted with the keys of
its Secret (read with your credentials), and every Secret's values print as *** (*** (before) /
*** (after) where they change, as kubectl diff masks them) and other decrypted strings as <redacted>.
With spec.kubeConfig the live objects, discovery and dry-runs are those of the remote cluster its
kubeconfig Secret names (the Secret read with your rights on the management cluster and validated
as the controller validates it; the dry-runs as the kubeconfig's identity, impersonating the
serviceAccount there as the controller does); the BundleDeployment, the revision store and the
Secrets the render reads stay on the management cluster.

  -f, --file <file>        the BundleDeployment (required)
  --dir <dir>              render this local tree instead of fetching the sources
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --default-service-account <name>
                           as hoist run's: the account that acts for a BundleDeployment
                           naming no serviceAccount (default: the controller itself)
  --override-manager <name>
                           as hoist run's: another field manager whose fields are taken over
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config
  --kube-version <v>       render with this Kubernetes version (helm's .Capabilities.KubeVersion)
                           instead of the cluster's, as helm template's flag
  --api-versions <g/v>     (repeatable, or comma-separated) group/versions helm sees as served
                           besides the cluster's, e.g. of CRDs not installed yet
${RESTRICTED_HELP}

exit codes: 0 no differences; 1 differences (or a refusal); 2 error (usage, render, API)
`;

const SYMBOL: Record<DiffEntry['action'], string> = {
  create: 'created',
  configure: 'configured',
  unchanged: 'unchanged',
  prune: 'pruned',
  orphan: 'kept (left the bundle)',
  keep: 'kept by retention policy',
  refuse: 'refused',
};

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
    if (e.action === 'refuse' || e.action === 'orphan' || e.action === 'keep' || e.note)
      lines.push(`  ${e.subject}: ${SYMBOL[e.action]}${e.note ? `: ${e.note}` : ''}`);
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
        'default-service-account': { type: 'string' },
        'override-manager': { type: 'string', multiple: true },
        'kube-version': { type: 'string' },
        'api-versions': { type: 'string', multiple: true },
        ...RESTRICTED_OPTION,
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
      const { client, server } = connection(values.kubeconfig);
      const tmp = await mkdtemp(join(tmpdir(), 'hoist-diff-'));
      let target: Awaited<ReturnType<typeof targetCluster>> | undefined;
      try {
        // spec.kubeConfig: its remote cluster's discovery, live objects and dry-runs
        target = await targetCluster(client, server, bd, { allowRestricted: !!values['allow-restricted-targets'] });
        if (target.cluster) io.err(`target cluster ${target.cluster} (spec.kubeConfig)\n`);
        // the controller's own render path: same objects, namespaces and content digest
        const out = await previewBundle(bd, {
          client,
          target: target.client,
          capabilities,
          controllerNamespace: values.namespace,
          ...(values.dir ? { dir: values.dir } : {}),
        });
        if (out.assumed) io.err(`${out.assumed}\n`);
        for (const w of out.warnings) io.err(`warning: ${w}\n`);
        const installed = (await client.get({ apiVersion: bd.apiVersion, kind: bd.kind }, bd.metadata.name)) as unknown as BundleDeployment | undefined;
        // whoever the controller would act as: the BD's ServiceAccount (or the default one), impersonated
        const actor = new Identities(target.client, values['default-service-account'] || undefined).for(bd);
        const preview = await previewRevision(
          {
            client: target.client,
            actor: actor.client,
            revisions: new RevisionStore(client, values.namespace),
            overrideManagers: [...DEFAULT_OVERRIDES, ...(values['override-manager'] ?? []).filter((m) => m !== '')],
          },
          bd,
          installed,
          out,
        );
        io.err(
          `revision ${preview.revision}${preview.isNew ? '' : ' (the installed one: only drift would be corrected)'}${actor.user ? `, applied as ${actor.user}` : ''}\n`,
        );
        io.err(outline(preview));
        // with spec.decryption, Secrets' values and decrypted values are printed redacted (redact-objects.ts)
        if (bd.spec.decryption) io.err('spec.decryption: Secret values and decrypted values are shown redacted (*** / <redacted>)\n');
        const entries = diffEntries(preview, bd.spec.decryption ? (out.sensitive ?? []) : undefined);
        let found = preview.refusal !== undefined;
        for (const e of entries) {
          if (e.action === 'unchanged' || e.action === 'orphan') continue;
          found = true;
          if (e.action === 'refuse') continue;
          io.out(await unified(tmp, e.subject.replaceAll(' ', '/'), e.live, e.merged));
        }
        // the API server's words (a refusal, a dry-run error) may quote a value
        const secrets = bd.spec.decryption ? redactionList(out.sensitive ?? []) : [];
        io.err(redact(summary(entries), secrets));
        if (preview.refusal) io.err(redact(`the controller's apply would fail: ${preview.refusal}\n`, secrets));
        return found ? DIFF_FOUND : DIFF_NONE;
      } finally {
        await rm(tmp, { recursive: true, force: true });
        await target?.close();
        await client.close();
      }
    },
    DIFF_ERROR,
  );
}
