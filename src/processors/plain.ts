/**
 * The `plain` format: a tree of Kubernetes manifests, applied as they are.
 *
 * Every `*.yaml`, `*.yml` and `*.json` file under the tree is read, in the order `kubectl apply
 * -R -f` walks it (Go's filepath.Walk: each directory's entries in byte order, depth first).
 * Hidden directories and files (a name starting with ".", e.g. .git, .github, .gitlab-ci.yml)
 * are skipped: they are tooling, not manifests. Symlinked files are followed when they stay
 * inside the tree; symlinked directories are not (cycles), which is reported as a warning.
 *
 * Pure: reads the tree, nothing else. Namespaces are left as written: the applier, which knows
 * which kinds are namespaced, defaults them to installNamespace.
 */
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { HoistError } from '../util/errors.ts';
import { combineProcessErrors, processError } from './errors.ts';
import { duplicateErrors, readManifestText } from './manifest.ts';
import type { SourcedObject } from './manifest.ts';
import type { ProcessContext, ProcessResult, Processor } from './processor.ts';
import { isHoistError } from '../util/errors.ts';

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

export interface ManifestFile {
  /** path relative to the tree, with "/" separators */
  path: string;
  absolute: string;
}

export interface ListFilesResult {
  files: ManifestFile[];
  warnings: string[];
}

/** The manifest files under `tree`, in kubectl -R order. */
export async function listManifestFiles(tree: string): Promise<ListFilesResult> {
  const root = await realpath(tree).catch((e: unknown) => {
    throw processError(`cannot read content tree: ${errorMessage(e)}`, 'read-error', '.', e);
  });
  const files: ManifestFile[] = [];
  const warnings: string[] = [];
  async function walk(dirAbs: string, dirRel: string): Promise<void> {
    const entries = await readdir(dirAbs, { withFileTypes: true });
    // Go's filepath.Walk order: names compared bytewise, not by locale
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const abs = path.join(dirAbs, entry.name);
      const rel = dirRel ? `${dirRel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await walk(abs, rel);
      } else if (entry.isSymbolicLink()) {
        const target = await realpath(abs).catch(() => undefined);
        if (target === undefined || !(target === root || target.startsWith(root + path.sep))) {
          warnings.push(`${rel}: symlink points outside the tree, skipped`);
          continue;
        }
        const st = await stat(target);
        if (st.isDirectory()) warnings.push(`${rel}: symlinked directory not followed`);
        else if (st.isFile() && MANIFEST_FILE.test(entry.name)) files.push({ path: rel, absolute: target });
      } else if (entry.isFile() && MANIFEST_FILE.test(entry.name)) {
        files.push({ path: rel, absolute: abs });
      }
    }
  }
  await walk(root, '');
  return { files, warnings };
}

/**
 * Reads and validates every object under the tree. All problems (bad documents, objects without
 * apiVersion/kind/name, duplicates) are reported together in one terminal HoistError.
 */
export async function renderPlain(tree: string, ctx: Pick<ProcessContext, 'installNamespace'>): Promise<ProcessResult> {
  const { files, warnings } = await listManifestFiles(tree);
  const sourced: SourcedObject[] = [];
  const errors: HoistError[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file.absolute, 'utf8');
    } catch (e) {
      errors.push(processError(`cannot read file: ${errorMessage(e)}`, 'read-error', file.path, e));
      continue;
    }
    try {
      const read = readManifestText(text, file.path);
      sourced.push(...read.objects);
      warnings.push(...read.warnings);
      errors.push(...read.errors);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
    }
  }
  errors.push(...duplicateErrors(sourced, ctx.installNamespace ?? ''));
  const failure = combineProcessErrors(errors);
  if (failure) throw failure;
  if (sourced.length === 0) warnings.push('no objects found: the tree has no *.yaml, *.yml or *.json manifests');
  return { objects: sourced.map((s) => s.object), warnings };
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const plainProcessor: Processor = {
  format: 'plain',
  render(tree: string, _config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult> {
    return renderPlain(tree, ctx);
  },
};
