/**
 * What every user verb shares: output streams, argument parsing with usage errors, the
 * connection from --kubeconfig / KUBECONFIG / ~/.kube/config, reading a BundleDeployment, and
 * kubectl-style formatting (tables, ages).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { API_VERSION, KIND, type BundleDeployment, type Condition } from '../../../api/v1alpha2/types.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../kube/client.ts';
import { isHoistError } from '../../util/errors.ts';

export const BD_TYPE = { apiVersion: API_VERSION, kind: KIND } as const;

/** where a verb writes; tests pass collectors, main.ts passes process.stdout/stderr */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** exit codes of the user verbs (docs/guides/cli.md "The `hoist` CLI"); `diff` has its own (diff.ts) */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** a bad command line: printed with the verb's help, exit code 2 */
export class UsageError extends Error {}

/** the options every verb that talks to a cluster takes */
export const CONNECTION_OPTIONS = {
  kubeconfig: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/** the controller's namespace, where revisions are stored (hoist run --namespace) */
export const NAMESPACE_OPTION = {
  namespace: { type: 'string', short: 'n', default: process.env.HOIST_NAMESPACE ?? 'hoist-system' },
} as const satisfies ParseArgsConfig['options'];

/** node's parseArgs, strict, with its errors turned into usage errors */
export function parse<const O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true as const, strict: true as const });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

export function connect(kubeconfig: string | undefined): RestKubeClient {
  return connection(kubeconfig).client;
}

/** the caller's client of the management cluster and its API server's URL (remote.ts checks remote servers against it) */
export function connection(kubeconfig: string | undefined): { client: RestKubeClient; server: string } {
  const cfg = loadKubeConfig(kubeconfig);
  return { client: createKubeClient(cfg, { userAgent: 'hoist-cli' }), server: cfg.server };
}

/** the BundleDeployment, or a failure naming it */
export async function readBD(client: RestKubeClient, name: string): Promise<BundleDeployment> {
  const bd = (await client.get(BD_TYPE, name)) as unknown as BundleDeployment | undefined;
  if (!bd) throw new Error(`bundledeployment ${JSON.stringify(name)} not found`);
  return bd;
}

/** exactly one NAME argument */
export function oneName(positionals: readonly string[], verb: string): string {
  if (positionals.length !== 1 || !positionals[0]) throw new UsageError(`${verb} takes exactly one BundleDeployment NAME`);
  return positionals[0];
}

/**
 * Runs a verb: usage errors print the help and give 2, other failures one line and 1. `body`
 * returns the exit code of success (diff: 0 or 1).
 */
/** an error as a verb reports it: a HoistError's description (stage, subject, why), else its message */
export function failureText(e: unknown): string {
  return isHoistError(e) ? e.describe() : e instanceof Error ? e.message : String(e);
}

export async function runVerb(verb: string, help: string, io: Io, body: () => Promise<number>, failedCode = EXIT_FAILED): Promise<number> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`hoist ${verb}: ${e.message}\n\n${help}`);
      return EXIT_USAGE;
    }
    io.err(`hoist ${verb}: ${failureText(e)}\n`);
    return failedCode;
  }
}

export function condition(bd: BundleDeployment, type: Condition['type']): Condition | undefined {
  return bd.status?.conditions?.find((c) => c.type === type);
}

/** done per the status contract (docs/status.md): Installed=True, Progressing=False, at the current generation */
export function isDone(bd: BundleDeployment): boolean {
  return (
    bd.status?.observedGeneration === bd.metadata.generation &&
    condition(bd, 'Installed')?.status === 'True' &&
    condition(bd, 'Progressing')?.status === 'False'
  );
}

/** kubectl's short age: 45s, 12m, 5h, 3d (and 2y) */
export function age(since: string | undefined, now: Date): string {
  if (!since) return '<unknown>';
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(since)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  return d < 730 ? `${d}d` : `${Math.floor(d / 365)}y`;
}

/** columns padded like kubectl's printer: three spaces between, the last column unpadded */
export function table(rows: ReadonlyArray<readonly string[]>): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
