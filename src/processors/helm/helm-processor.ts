/**
 * The `helm` format: a chart rendered by Helm's own engine, the real `helm` binary running
 * `helm template`, never a reimplementation. See ./README.md for the rules (chart location,
 * values, hooks, dependencies, errors).
 *
 * Pure in the sense of DESIGN §2: the output depends only on the tree, the config and the
 * context (release name, namespace, kube version, API versions, the valuesFrom text read from
 * the cluster). helm runs with a private temporary HOME and no network; values reach it through
 * 0600 files in that directory, one per layer (values.ts), never on the command line (where they
 * would show in `ps`). Charts that call random or time functions are
 * the exception helm cannot remove; they are rendered and reported in the warnings.
 */
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { HoistError } from '../../util/errors.ts';
import { describeFsError, formatBytes, verifyTree } from '../../util/content-tree.ts';
import { BUNDLE_LIMITS, openBundle } from '../bundle-files.ts';
import { combineProcessErrors, processError } from '../errors.ts';
import { duplicateErrors } from '../manifest.ts';
import type { ProcessContext, ProcessResult, Processor } from '../processor.ts';
import { chartLabel, locateChart } from './chart.ts';
import { checkDependencies } from './dependencies.ts';
import { determinismWarnings } from './determinism.ts';
import { helmFailure } from './helm-errors.ts';
import { classifyHook, orderHooks } from './hooks.ts';
import { parseHelmOutput } from './output.ts';
import { runHelm } from './run-helm.ts';
import { checkSchemaReferences } from './schema-refs.ts';
import { scrubPaths } from '../tree-paths.ts';
import { readValuesFiles, redact, secretStrings, valuesFromLayers } from './values.ts';
import type { JsonObject } from '../yaml/values.ts';
import { yamlBudget } from '../yaml/budget.ts';
import { bundleDecryptor } from '../sops/decryptor.ts';
import type { HelmRunResult } from './run-helm.ts';
import { ProcessCode } from '../errors.ts';

export interface HelmProcessorOptions {
  /**
   * Path of the helm binary, or a function returning it, called once on the first render (so a
   * lookup that may build helm, like devcluster's toolPath('helm'), costs nothing until a helm
   * bundle appears). Supplied by the wiring layer: processors must not import src/devcluster.
   */
  helmBinary: string | (() => string);
  /** kill a helm run after this long; default 120 s. A timeout is transient (the machine may be busy). */
  timeoutMs?: number;
  /** refuse rendered output larger than this; default 64 MiB */
  maxOutputBytes?: number;
  /** where private helm homes are created; default os.tmpdir() */
  tmpDir?: string;
}

export interface HelmTemplateInput {
  releaseName: string;
  chartDir: string;
  namespace: string;
  /** merged by helm in this order, each over the ones before (and all over the chart's values.yaml) */
  valuesFiles: readonly string[];
  kubeVersion?: string;
  apiVersions?: readonly string[];
}

/**
 * The exact `helm template` arguments Hoist uses. `--flag=value` throughout, so a value that
 * starts with "-" can never be read as a flag. Test hooks are skipped by helm itself; the other
 * hooks stay in the output and are handled by ./hooks.ts.
 */
export function helmTemplateArgs(input: HelmTemplateInput): string[] {
  const args = [
    'template',
    input.releaseName,
    input.chartDir,
    `--namespace=${input.namespace}`,
    ...input.valuesFiles.map((f) => `--values=${f}`),
    '--include-crds',
    '--skip-tests',
  ];
  if (input.kubeVersion) args.push(`--kube-version=${input.kubeVersion}`);
  for (const v of input.apiVersions ?? []) args.push(`--api-versions=${v}`);
  return args;
}

const DEFAULT_TIMEOUT_MS = 120_000;
/** the same bound as the bytes the other processors parse per bundle */
const DEFAULT_MAX_OUTPUT = BUNDLE_LIMITS.maxTotalBytes;
const WHO = 'helm processor';

/** Creates the helm processor. Rendering is concurrency-safe: every render has its own helm home. */
export function createHelmProcessor(options: HelmProcessorOptions): Processor {
  const resolveBinary = options.helmBinary;
  let binary: string | undefined = typeof resolveBinary === 'string' ? resolveBinary : undefined;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;

  const helm = (): string => {
    if (binary === undefined) {
      try {
        binary = (resolveBinary as () => string)();
      } catch (e) {
        throw processError(`helm binary unavailable: ${(e as Error).message}`, ProcessCode.HelmUnavailable, undefined, e);
      }
    }
    return binary;
  };

  async function run(args: string[], home: string, subject: string, what: string): Promise<HelmRunResult> {
    let result: HelmRunResult;
    try {
      result = await runHelm(helm(), args, { home, timeoutMs, maxOutputBytes });
    } catch (e) {
      throw processError(`cannot run helm: ${describeFsError(e)}`, ProcessCode.HelmUnavailable, subject, e);
    }
    if (result.timedOut) throw processError(`${what} did not finish within ${timeoutMs / 1000}s`, ProcessCode.HelmTimeout, subject);
    if (result.outputTooLarge) {
      throw processError(`${WHO}: ${what} rendered more than the limit of ${formatBytes(maxOutputBytes)} of output`, ProcessCode.OutputTooLarge, subject);
    }
    return result;
  }

  async function render(tree: string, config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult> {
    const bundle = openBundle(tree, WHO);
    const chart = await locateChart(bundle);
    const label = chartLabel(chart);
    const subject = `helm chart ${label}`;
    // helm reads the chart directory itself and follows every link in it (.Files.Get, templates,
    // subcharts): it gets the chart only once all of it obeys the rule the other processors read
    // by (links may end anywhere in the content tree, as for them)
    await verifyTree(tree, { stage: 'process', who: WHO, limits: BUNDLE_LIMITS, under: chart.relDir });
    await checkSchemaReferences(bundle, chart.relDir);
    const namespace = ctx.installNamespace;
    if (!namespace) throw processError('spec.installNamespace is required for helm bundles', ProcessCode.InvalidConfig, subject);
    const values = (config?.helm?.values ?? {}) as JsonObject;
    const sops = bundleDecryptor(ctx.decryption, yamlBudget());
    const files = await readValuesFiles(bundle, chart, config?.helm?.valuesFiles ?? [], yamlBudget(), sops);
    const releaseName = config?.helm?.releaseName || ctx.name;

    const home = await mkdtemp(path.join(options.tmpDir ?? tmpdir(), 'hoist-helm-'));
    try {
      await Promise.all(['cache', 'config', 'data'].map((d) => mkdir(path.join(home, d))));
      // helm names the directories it was given: messages show them relative to the tree
      const realTree = await realpath(tree).catch(() => tree);
      // the layers in helm's merge order, each a 0600 file in the private home (values.ts)
      const layers = [...files.layers, ...valuesFromLayers(ctx.helmValuesFrom ?? []), { from: 'config.helm.values', values }];
      // a Secret's values never reach a message, even where helm quotes a value (a schema's pattern)
      const secrets = secretStrings(layers);
      const scrub = (text: string): string =>
        redact(
          scrubPaths(text, [
            [home, '<helm-home>'],
            [tree, '.'],
            [realTree, '.'],
          ]),
          secrets,
        );
      await checkDependencies(bundle, chart, async (dir) => {
        const r = await run(['dependency', 'list', dir], home, subject, 'helm dependency list');
        if (r.code !== 0) throw helmFailure(scrub(r.stderr), label);
        return r.stdout;
      });
      const valuesFiles = layers.map((_, i) => path.join(home, `values-${i}.json`));
      // JSON is YAML, and JSON.stringify cannot produce text helm would read differently (a
      // Secret's or a decrypted file's layer too: 0600, in the private home removed when helm is done)
      await Promise.all(layers.map((l, i) => writeFile(valuesFiles[i]!, JSON.stringify(l.values), { mode: 0o600 })));
      const args = helmTemplateArgs({
        releaseName,
        chartDir: chart.dir,
        namespace,
        valuesFiles,
        ...(ctx.kubeVersion ? { kubeVersion: ctx.kubeVersion } : {}),
        ...(ctx.apiVersions ? { apiVersions: ctx.apiVersions } : {}),
      });
      const [result, scanWarnings] = await Promise.all([run(args, home, subject, 'helm template'), determinismWarnings(bundle, chart.relDir, chart.name)]);
      if (result.code !== 0) throw helmFailure(scrub(result.stderr), label);

      const parsed = await parseHelmOutput(result.stdout, label);
      // (without the original as cause: its message is what is being blanked)
      const errors: HoistError[] = parsed.errors.map((e) =>
        secrets.length
          ? new HoistError(scrub(e.message), {
              stage: e.stage,
              reason: e.reason,
              code: e.code,
              ...(e.subject ? { subject: e.subject } : {}),
              terminal: e.terminal,
            })
          : e,
      );
      const kept = parsed.objects.filter((o) => classifyHook(o.object).action !== 'drop');
      errors.push(...duplicateErrors(kept, namespace));
      const failure = combineProcessErrors(errors);
      if (failure) throw failure;

      const ordered = orderHooks(parsed.objects.map((o) => ({ object: o.object, source: o.file })));
      const helmWarnings = scrub(result.stderr)
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '')
        .map((l) => `helm: ${l}`);
      const warnings = [...files.warnings, ...helmWarnings, ...parsed.warnings.map(scrub), ...scanWarnings.map((w) => `${subject}: ${w}`), ...ordered.warnings];
      if (ordered.objects.length === 0) warnings.push(`${subject} rendered no objects`);
      return { objects: ordered.objects, warnings, ...(sops.sensitive.size ? { sensitive: [...sops.sensitive] } : {}) };
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  return { format: 'helm', render };
}
