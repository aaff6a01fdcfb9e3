#!/usr/bin/env node
/**
 * The `hoist` command: `run` (the controller), `render` (client-side preview), `demo`, and the
 * user verbs over a kubeconfig (src/cli/verbs/: get, pause, resume, rollback, history,
 * reconcile, retry, tree, events, diff, completion).
 */
import { parseArgs } from 'node:util';
import { createLogger } from '../util/log.ts';
import type { Io } from './verbs/common.ts';

const USAGE = `usage: hoist <command> [flags]

commands:
  run      run the controller
             --kubeconfig <file>   (default: $KUBECONFIG, ~/.kube/config, in-cluster)
             --namespace <ns>      controller namespace (default hoist-system)
             --install-crd         apply the BundleDeployment CRD and the tenancy policy at start-up
             --metrics-bind-address <host:port>  /healthz /readyz /metrics (default 127.0.0.1:8080, "0" disables)
             --leader-elect        take part in leader election on a Lease
             --workers <n>         concurrent reconciles (default 16)
             --max-concurrent-renders <n>
                                   of those, how many fetch and render at once (default 4): bounds
                                   the memory and disk that content in flight takes; the same
                                   number bounds source resolves that make requests (own slots)
             --render-threads <n>  render plain and registry+v1 bundles (read the tree, parse YAML,
                                   generate objects) on n worker threads, each with a 256 MiB heap
                                   limit (default 0: on the controller's thread); a render whose
                                   thread stops runs again on the controller's thread
             --shard <name>        reconcile only BundleDeployments labelled core.rukpak.io/shard=<name>,
                                   on the Lease hoist-controller-<name>; without it (or '') only
                                   unlabelled ones, on the Lease hoist-controller
             --selector <labels>   reconcile only BundleDeployments matching this label selector
                                   (as well as the shard's)
             --cache-dir <dir>     content cache (default $HOIST_CACHE/content or ~/.cache/hoist/content)
             --cache-max-size <q>  content cache budget, e.g. 1536Mi or 2G (default unlimited): stored
                                   content, downloads in flight and composed sources together; set
                                   it below the disk it lives on, with room for file-system overhead
             --max-revision-size <q>
                                   the largest revision stored, gzip-compressed, in revision Secrets
                                   (default 8Mi: ten Secrets); a larger one is refused before
                                   anything is stored or applied
             --fetch-timeout <d>   overall deadline of one source resolve or fetch, e.g. 10m (default 10m)
             --helm-index-max-size <q>
                                   the largest index.yaml a helm source reads (default 50Mi); a
                                   larger one is refused, naming this limit. Only the chart's
                                   part is parsed; an index in a layout Helm does not write is
                                   parsed whole, up to 16Mi
             --reconcile-timeout <d>
                                   time budget of one reconcile of one BundleDeployment (default 5m):
                                   past it the reconcile stops before its next apply (a fetch,
                                   render or hook wait under way is aborted), the BundleDeployment
                                   says so in Progressing, and it is retried with backoff
             --registries-conf <file>  containers' registries.conf v2: blocked and insecure (plain http)
                                   registries, mirrors tried in order for digest references
             --ca-dir <dir>        one PEM per host (host:port.crt or host.crt), trusted for that host
                                   by every source; TLS is verified except for insecure registries
             --health-rules <file> a YAML list of cluster-wide health rules (CEL, as spec.healthChecks)
                                   for kinds the shipped library and kstatus do not judge (or judge
                                   otherwise); read once at start-up, a bad rule stops it
             --default-service-account <name>
                                   BundleDeployments without spec.serviceAccount act as this
                                   ServiceAccount of their installNamespace (impersonation)
             --allow-restricted-targets
                                   a BundleDeployment's spec.kubeConfig may name the management
                                   cluster's own API server or a link-local/cloud metadata address
                                   (refused by default)
             --override-manager <name>
                                   (repeatable) a field manager whose fields every apply takes
                                   over and so reverts, besides kubectl, kubectl-edit, kubectl-patch,
                                   kubectl-set, kubectl-client-side-apply, kubectl-label,
                                   kubectl-annotate and before-first-apply
             --webhook-bind-address <host:port>  push receiver: POST /hooks/github, /hooks/gitlab,
                                   /hooks/generic (default "0": off); a verified branch push
                                   re-resolves the BundleDeployments following that repository
             --webhook-secret <namespace/name>  Secret with keys github, gitlab, generic
                                   (default <namespace>/hoist-webhook; re-read when it changes)
  render   print the objects a BundleDeployment would install, and their content digest
             -f <bundledeployment.yaml> [--dir <local tree>] [--kubeconfig <file>] [-o yaml|json]
             [--kube-version <v>] [--api-versions <group/version>[,...]]...
             renders exactly as the controller does; with --kubeconfig, against that cluster's
             API versions, Kubernetes version and scopes (without: built-in kinds' scopes only,
             and helm and registry-v1 assume the Kubernetes version Hoist's tools are built at,
             K8S_VERSION of scripts/tool-versions.env, not helm's v1.20.0, and helm's default
             API versions; stderr says what was assumed)
             --kube-version        the Kubernetes version helm sees (.Capabilities.KubeVersion),
                                   instead of the assumed or the cluster's, as helm template's
             --api-versions        group/versions served besides the built-in or the cluster's
                                   (.Capabilities.APIVersions), as helm template's
             -n, --namespace       the controller's namespace, where config.helm.valuesFrom and
                                   the spec.decryption Secret and postBuild.substituteFrom are
                                   read (with your credentials) when the BundleDeployment has no
                                   serviceAccount (default $HOIST_NAMESPACE or hoist-system)
             with spec.decryption (needs --kubeconfig), Secrets' values print as *** and other
             decrypted strings as <redacted>
  demo     start a local control plane, install argo-rollouts through a BundleDeployment
             --keep                keep everything running until Ctrl-C
             --kwok                no real node (containerd + kubelet): every pod on kwok's fake node

user verbs (over --kubeconfig, $KUBECONFIG or ~/.kube/config; \`hoist <verb> --help\` for each):
  get [NAME]                  BundleDeployments as a table with the done signal, or -o yaml|json
  pause NAME --reason <text>  set spec.paused for a hotfix, record why/who/when, write an Event
  resume NAME                 clear spec.paused and the pause record, write an Event
  rollback NAME --to <n>      set the spec that produced stored revision n (no fetch, no render)
  history NAME                revisions: phase, content digest, pinned sources, when stored
  reconcile NAME [--wait]     reconcile now: re-resolve floating refs, retry a failed revision once
  retry NAME                  try a RolledBack or Blocked revision once more and wait for the outcome
  tree NAME                   every object of the active revision: phase, owner, health, why not ready
  events NAME                 the Events of the BundleDeployment and of its objects that are not ready
  diff -f <bd.yaml>           server-side dry-run of the rendered objects, per-object diff
  notify test PROVIDER -n NS  send a test notification through a NotificationProvider (as you)
  completion bash|zsh         shell completion script

exit codes: 0 success; 1 failure (not found, refused, API error); 2 usage error.
  diff: 0 no differences, 1 differences, 2 error (as kubectl diff).
`;

/** the user verbs, loaded on use */
const VERBS: Record<string, () => Promise<(args: string[], io: Io) => Promise<number>>> = {
  get: async () => (await import('./verbs/get.ts')).get,
  pause: async () => (await import('./verbs/pause.ts')).pause,
  resume: async () => (await import('./verbs/pause.ts')).resume,
  rollback: async () => (await import('./verbs/rollback.ts')).rollback,
  history: async () => (await import('./verbs/history.ts')).history,
  reconcile: async () => (await import('./verbs/reconcile.ts')).reconcile,
  retry: async () => (await import('./verbs/reconcile.ts')).retry,
  tree: async () => (await import('./verbs/tree.ts')).tree,
  events: async () => (await import('./verbs/events.ts')).events,
  diff: async () => (await import('./verbs/diff.ts')).diff,
  completion: async () => (await import('./verbs/completion.ts')).completion,
  notify: async () => (await import('./verbs/notify.ts')).notify,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'run': {
      const { values } = parseArgs({
        args: rest,
        options: {
          kubeconfig: { type: 'string' },
          namespace: { type: 'string', default: process.env.HOIST_NAMESPACE ?? 'hoist-system' },
          'install-crd': { type: 'boolean', default: false },
          'metrics-bind-address': { type: 'string', default: '127.0.0.1:8080' },
          'leader-elect': { type: 'boolean', default: false },
          workers: { type: 'string', default: '16' },
          'max-concurrent-renders': { type: 'string', default: '4' },
          'render-threads': { type: 'string', default: '0' },
          shard: { type: 'string' },
          selector: { type: 'string' },
          'cache-dir': { type: 'string' },
          'cache-max-size': { type: 'string' },
          'max-revision-size': { type: 'string', default: '8Mi' },
          'fetch-timeout': { type: 'string', default: '10m' },
          'helm-index-max-size': { type: 'string', default: '50Mi' },
          'reconcile-timeout': { type: 'string', default: '5m' },
          'default-service-account': { type: 'string' },
          'allow-restricted-targets': { type: 'boolean', default: false },
          'override-manager': { type: 'string', multiple: true },
          'registries-conf': { type: 'string' },
          'ca-dir': { type: 'string' },
          'health-rules': { type: 'string' },
          'webhook-bind-address': { type: 'string', default: '0' },
          'webhook-secret': { type: 'string' },
        },
      });
      const { parseDuration } = await import('../../api/v1alpha2/defaults.ts');
      const { parseByteSize } = await import('../util/byte-size.ts');
      const { runController } = await import('./run.ts');
      return runController({
        kubeconfig: values.kubeconfig,
        namespace: values.namespace,
        installCRD: values['install-crd'],
        metricsBindAddress: values['metrics-bind-address'],
        leaderElect: values['leader-elect'],
        workers: positiveInt(values.workers, '--workers'),
        maxConcurrentRenders: positiveInt(values['max-concurrent-renders'], '--max-concurrent-renders'),
        renderThreads: nonNegativeInt(values['render-threads'], '--render-threads'),
        shard: values.shard,
        selector: values.selector,
        cacheDir: values['cache-dir'],
        ...(values['cache-max-size'] ? { cacheMaxBytes: parseByteSize(values['cache-max-size'], '--cache-max-size') } : {}),
        maxRevisionBytes: parseByteSize(values['max-revision-size'], '--max-revision-size'),
        fetchTimeoutMs: parseDuration(values['fetch-timeout'], '--fetch-timeout'),
        helmIndexMaxBytes: parseByteSize(values['helm-index-max-size'], '--helm-index-max-size'),
        reconcileTimeoutMs: positiveDuration(parseDuration(values['reconcile-timeout'], '--reconcile-timeout'), '--reconcile-timeout'),
        defaultServiceAccount: values['default-service-account'] || undefined,
        allowRestrictedTargets: values['allow-restricted-targets'],
        overrideManagers: (values['override-manager'] ?? []).filter((m) => m !== ''),
        ...(values['registries-conf'] ? { registriesConf: values['registries-conf'] } : {}),
        ...(values['ca-dir'] ? { caDir: values['ca-dir'] } : {}),
        ...(values['health-rules'] ? { healthRules: values['health-rules'] } : {}),
        webhookBindAddress: values['webhook-bind-address'],
        ...(values['webhook-secret'] ? { webhookSecret: values['webhook-secret'] } : {}),
        log: createLogger({ async: true }),
      });
    }
    case 'render': {
      const { values } = parseArgs({
        args: rest,
        options: {
          file: { type: 'string', short: 'f' },
          dir: { type: 'string' },
          kubeconfig: { type: 'string' },
          output: { type: 'string', short: 'o', default: 'yaml' },
          'kube-version': { type: 'string' },
          'api-versions': { type: 'string', multiple: true },
          namespace: { type: 'string', short: 'n' },
        },
      });
      if (!values.file) {
        process.stderr.write(USAGE);
        return 2;
      }
      const { parseCapabilityFlags } = await import('./capabilities.ts');
      let capabilities;
      try {
        capabilities = parseCapabilityFlags(values['kube-version'], values['api-versions']);
      } catch (e) {
        process.stderr.write(`hoist render: ${(e as Error).message}\n`);
        return 2;
      }
      const { render } = await import('./render.ts');
      return render({
        file: values.file,
        dir: values.dir,
        kubeconfig: values.kubeconfig,
        capabilities,
        namespace: values.namespace,
        output: values.output === 'json' ? 'json' : 'yaml',
      });
    }
    case 'demo': {
      const { values } = parseArgs({ args: rest, options: { keep: { type: 'boolean', default: false }, kwok: { type: 'boolean', default: false } } });
      const { demo } = await import('./demo.ts');
      return demo({ keep: values.keep, kwok: values.kwok });
    }
    default: {
      const verb = command === undefined ? undefined : VERBS[command];
      if (verb) return (await verb())(rest, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
      process.stderr.write(USAGE);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
    }
  }
}

function positiveDuration(ms: number, flag: string): number {
  if (ms <= 0) throw new Error(`${flag} must be longer than zero`);
  return ms;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag} ${JSON.stringify(text)} is not a whole number of at least 1`);
  return n;
}

function nonNegativeInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${flag} ${JSON.stringify(text)} is not a whole number of at least 0`);
  return n;
}

main(process.argv.slice(2)).then(
  // exit only once stdout is flushed: a pipe is written asynchronously, and exiting at once cuts
  // off a large `render` output (writes are ordered, so this callback runs after the earlier ones)
  (code) => process.stdout.write('', () => process.exit(code)),
  (e: unknown) => {
    process.stderr.write(`hoist: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
