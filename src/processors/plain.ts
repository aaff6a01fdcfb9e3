/**
 * The `plain` format: a tree of Kubernetes manifests, applied as they are.
 *
 * Every `*.yaml`, `*.yml` and `*.json` file under the tree is read, in the order `kubectl apply
 * -R -f` walks it (Go's filepath.Walk: each directory's entries in byte order, depth first).
 * Hidden directories and files (a name starting with ".", e.g. .git, .github, .gitlab-ci.yml)
 * are skipped: they are tooling, not manifests. Files are read through ./bundle-files.ts: a
 * symlink must end at a regular file inside the tree (src/util/content-tree.ts), and files are
 * capped in size, per file and per bundle; a violation fails the render naming the path.
 *
 * Pure: reads the tree, nothing else. Namespaces are left as written: the applier, which knows
 * which kinds are namespaced, defaults them to installNamespace.
 */
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { ContentTree, TreeLimits } from '../util/content-tree.ts';
import type { HoistError } from '../util/errors.ts';
import { isHoistError } from '../util/errors.ts';
import { openBundle } from './bundle-files.ts';
import { combineProcessErrors } from './errors.ts';
import { duplicateErrors, readManifest } from './manifest.ts';
import type { SourcedObject } from './manifest.ts';
import type { ProcessContext, ProcessResult, Processor } from './processor.ts';
import { bundleDecryptor } from './sops/decryptor.ts';
import { yamlBudget } from './yaml/budget.ts';

const MANIFEST_FILE = /\.(ya?ml|json)$/i;
const WHO = 'plain processor';

export interface ManifestFile {
  /** path relative to the tree, with "/" separators */
  path: string;
}

export interface ListFilesResult {
  files: ManifestFile[];
  warnings: string[];
  /** links that break the containment rule (src/util/content-tree.ts), one per link */
  errors: HoistError[];
}

/** The manifest files under the tree, in kubectl -R order. */
export async function listManifestFiles(tree: string | ContentTree): Promise<ListFilesResult> {
  const bundle = typeof tree === 'string' ? openBundle(tree, WHO) : tree;
  const files: ManifestFile[] = [];
  const warnings: string[] = [];
  const errors: HoistError[] = [];
  async function walk(dirRel: string): Promise<void> {
    // Go's filepath.Walk order: names compared bytewise, not by locale (list sorts so)
    for (const entry of (await bundle.list(dirRel)) ?? []) {
      if (entry.name.startsWith('.')) continue;
      const rel = dirRel ? `${dirRel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await walk(rel);
      } else if (entry.isSymbolicLink()) {
        // the one rule: a link must end at a regular file inside the tree, whatever its name
        try {
          await bundle.resolveFile(rel);
        } catch (e) {
          if (!isHoistError(e)) throw e;
          errors.push(e);
          continue;
        }
        if (MANIFEST_FILE.test(entry.name)) files.push({ path: rel });
      } else if (entry.isFile() && MANIFEST_FILE.test(entry.name)) {
        files.push({ path: rel });
      }
    }
  }
  await walk('');
  return { files, warnings, errors };
}

/**
 * Reads and validates every object under the tree. All problems (bad documents, objects without
 * apiVersion/kind/name, duplicates, links out of the tree, files over the caps, SOPS-encrypted
 * files that cannot be decrypted) are reported together in one terminal HoistError. A
 * SOPS-encrypted file is decrypted with ctx.decryption in memory and read as `sops -d` prints it.
 */
export async function renderPlain(
  tree: string,
  ctx: Pick<ProcessContext, 'installNamespace' | 'decryption'>,
  limits: Partial<TreeLimits> = {},
): Promise<ProcessResult> {
  const bundle = openBundle(tree, WHO, limits);
  const { files, warnings, errors } = await listManifestFiles(bundle);
  const sourced: SourcedObject[] = [];
  const budget = yamlBudget();
  const sops = bundleDecryptor(ctx.decryption, budget);
  for (const file of files) {
    try {
      const text = await sops.manifestText(await bundle.readText(file.path), file.path);
      const read = await readManifest(text, file.path, budget);
      sourced.push(...read.objects);
      warnings.push(...read.warnings);
      errors.push(...read.errors);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
      // past the per-bundle cap every further read fails the same way
      if (bundle.exhausted) break;
    }
  }
  errors.push(...duplicateErrors(sourced, ctx.installNamespace ?? ''));
  const failure = combineProcessErrors(errors);
  if (failure) throw failure;
  if (sourced.length === 0) warnings.push('no objects found: the tree has no *.yaml, *.yml or *.json manifests');
  return { objects: sourced.map((s) => s.object), warnings, ...(sops.sensitive.size ? { sensitive: [...sops.sensitive] } : {}) };
}

export const plainProcessor: Processor = {
  format: 'plain',
  render(tree: string, _config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult> {
    return renderPlain(tree, ctx);
  },
};
