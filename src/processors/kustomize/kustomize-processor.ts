/**
 * The `kustomize` format: `kustomize build` of a directory of the tree by kustomize's own engine,
 * the real binary built from sigs.k8s.io/kustomize/kustomize/v5 (scripts/ensure-tools.sh), never
 * a reimplementation. See ./README.md.
 *
 * Containment, as for helm: the whole tree obeys the containment rule and the size caps before
 * kustomize runs (it follows links and reads bases anywhere in the tree); every kustomization it
 * will read names only files and directories of the bundle (kustomizations.ts: remote bases are
 * refused, naming them); kustomize runs with the default load restrictor (files only under each
 * kustomization's own directory), without plugins, helm inflation or exec functions, with a
 * private HOME, no PATH (no git for a remote base) and proxies pointing at a closed port, killed
 * after a timeout or beyond the output cap.
 */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { describeFsError, formatBytes, verifyTree } from '../../util/content-tree.ts';
import { BUNDLE_LIMITS, openBundle } from '../bundle-files.ts';
import { combineProcessErrors, ProcessCode, processError } from '../errors.ts';
import { duplicateErrors, readManifest } from '../manifest.ts';
import type { ProcessContext, ProcessResult, Processor } from '../processor.ts';
import type { KubeObject } from '../../kube/types.ts';
import { CLOSED_PROXY, runSealed, type SealedRunResult } from '../run-sealed.ts';
import { relativePathProblem, scrubPaths } from '../tree-paths.ts';
import { listManifestFiles } from '../plain.ts';
import { bundleDecryptor } from '../sops/decryptor.ts';
import { decryptRenderedObject, sopsMacOf } from '../sops/rendered.ts';
import { yamlBudget } from '../yaml/budget.ts';
import type { ContentTree } from '../../util/content-tree.ts';
import { isHoistError, type HoistError } from '../../util/errors.ts';
import { checkKustomizations } from './kustomizations.ts';
import { kustomizeFailure } from './kustomize-errors.ts';
import { hasOverrides, overrideKustomization, TREE_LINK } from './overrides.ts';

export interface KustomizeProcessorOptions {
  /** path of the kustomize binary, or a function returning it (called on the first render) */
  kustomizeBinary: string | (() => string);
  /** kill a build after this long; default 120 s (transient: the machine may be busy) */
  timeoutMs?: number;
  /** refuse output larger than this; default 64 MiB, the bound every format parses */
  maxOutputBytes?: number;
  tmpDir?: string;
}

const WHO = 'kustomize processor';
const DEFAULT_TIMEOUT_MS = 120_000;

/** The exact arguments: no plugin, helm or exec flag; the default load restrictor, said explicitly. */
export function kustomizeBuildArgs(dir: string): string[] {
  return ['build', dir, '--load-restrictor=LoadRestrictionsRootOnly'];
}

/** The whole environment kustomize runs with: nothing of the controller's, no PATH (so no git), no network. */
export function kustomizeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    TMPDIR: home,
    XDG_CONFIG_HOME: path.join(home, 'config'),
    KUSTOMIZE_PLUGIN_HOME: path.join(home, 'no-plugins'),
    HTTP_PROXY: CLOSED_PROXY,
    HTTPS_PROXY: CLOSED_PROXY,
    NO_PROXY: '',
  };
}

/** config.kustomize.path as a tree-relative directory ("" the root) */
function buildDirOf(config: BundleDeploymentSpec['config']): string {
  const raw = (config?.kustomize?.path ?? '').replace(/\/+$/, '').replace(/^\.\/?/, '');
  if (raw === '') return '';
  const problem = relativePathProblem(raw);
  if (problem) throw processError(`config.kustomize.path ${JSON.stringify(raw)} ${problem}`, ProcessCode.InvalidConfig, 'config.kustomize.path');
  return path.posix.normalize(raw);
}

export function createKustomizeProcessor(options: KustomizeProcessorOptions): Processor {
  let binary: string | undefined = typeof options.kustomizeBinary === 'string' ? options.kustomizeBinary : undefined;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? BUNDLE_LIMITS.maxTotalBytes;

  const kustomize = (): string => {
    if (binary === undefined) {
      try {
        binary = (options.kustomizeBinary as () => string)();
      } catch (e) {
        throw processError(`kustomize binary unavailable: ${(e as Error).message}`, ProcessCode.KustomizeUnavailable, undefined, e);
      }
    }
    return binary;
  };

  async function render(tree: string, config: BundleDeploymentSpec['config'], _ctx: ProcessContext): Promise<ProcessResult> {
    const dir = buildDirOf(config);
    const subject = `kustomize build ${dir || '.'}`;
    // kustomize reads bases anywhere in the tree and follows links as the kernel does: it gets
    // the tree only once all of it obeys the rule the other processors read by
    await verifyTree(tree, { stage: 'process', who: WHO, limits: BUNDLE_LIMITS });
    const bundle = openBundle(tree, WHO);
    await checkKustomizations(bundle, dir);

    const home = await mkdtemp(path.join(options.tmpDir ?? tmpdir(), 'hoist-kustomize-'));
    try {
      const realTree = await realpath(tree).catch(() => tree);
      let target = path.join(realTree, dir);
      const overrides = config?.kustomize;
      if (hasOverrides(overrides)) {
        // the spec's fields as a kustomization over the build directory (overrides.ts)
        const wrap = path.join(home, 'wrap');
        await mkdir(wrap);
        await symlink(realTree, path.join(wrap, TREE_LINK));
        await writeFile(path.join(wrap, 'kustomization.yaml'), overrideKustomization(overrides!, dir), { mode: 0o600 });
        target = wrap;
      }
      const scrub = (text: string): string =>
        scrubPaths(text, [
          [path.join(home, 'wrap', TREE_LINK), '.'],
          [home, '<kustomize-home>'],
          [tree, '.'],
          [realTree, '.'],
        ]);
      let result: SealedRunResult;
      try {
        result = await runSealed(kustomize(), kustomizeBuildArgs(target), { home, timeoutMs, maxOutputBytes, env: kustomizeEnv(home) });
      } catch (e) {
        throw processError(`cannot run kustomize: ${describeFsError(e)}`, ProcessCode.KustomizeUnavailable, subject, e);
      }
      if (result.timedOut) throw processError(`kustomize build did not finish within ${timeoutMs / 1000}s`, ProcessCode.KustomizeTimeout, subject);
      if (result.outputTooLarge)
        throw processError(
          `${WHO}: kustomize build rendered more than the limit of ${formatBytes(maxOutputBytes)} of output`,
          ProcessCode.OutputTooLarge,
          subject,
        );
      if (result.code !== 0) throw kustomizeFailure(scrub(result.stderr), subject);

      const read = await readManifest(result.stdout, subject);
      const errors = [...read.errors, ...duplicateErrors(read.objects, _ctx.installNamespace ?? '')];
      const sensitive = await decryptOutput(
        read.objects.map((o) => o.object),
        bundle,
        _ctx,
        errors,
        subject,
      );
      const failure = combineProcessErrors(errors);
      if (failure) throw failure;
      const warnings = [
        ...scrub(result.stderr)
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== '')
          .map((l) => `kustomize: ${l}`),
        ...read.warnings,
      ];
      if (read.objects.length === 0) warnings.push(`${subject} rendered no objects`);
      return { objects: read.objects.map((o) => o.object), warnings, ...(sensitive.length ? { sensitive } : {}) };
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  return { format: 'kustomize', render };
}

/**
 * SOPS-encrypted objects of kustomize's output, decrypted in place (sops/rendered.ts): only when
 * the output has one are the tree's encrypted files decrypted and MAC-checked (every problem
 * collected in `errors`), and each such object is decrypted with the file it came from. Returns
 * the decrypted values' texts.
 */
async function decryptOutput(objects: KubeObject[], bundle: ContentTree, ctx: ProcessContext, errors: HoistError[], subject: string): Promise<string[]> {
  const encrypted = objects.filter((o) => sopsMacOf(o) !== undefined);
  if (encrypted.length === 0) return [];
  const sops = bundleDecryptor(ctx.decryption, yamlBudget());
  const listed = await listManifestFiles(bundle);
  const before = errors.length;
  for (const file of listed.files) {
    try {
      await sops.manifestText(await bundle.readText(file.path), file.path);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
      if (bundle.exhausted) break;
    }
  }
  // a file that cannot be decrypted says why; its objects need not say it again
  if (errors.length > before) return [];
  const sensitive = new Set(sops.sensitive);
  for (const o of encrypted) errors.push(...decryptRenderedObject(o, sops.byMac, sensitive, subject));
  return [...sensitive];
}
