/**
 * What a kustomization may refer to before kustomize is run on it: only directories and files of
 * the bundle. kustomize itself would treat a `resources` / `bases` / `components` entry it cannot
 * find locally as a remote base (a git clone, or an HTTP GET for a URL); Hoist refuses such an
 * entry here, naming it and the kustomization, so no remote base is ever fetched — kustomize also
 * runs with no network and no git on its PATH (kustomize-processor.ts), this check makes the
 * refusal clear. Every kustomization reachable from the build directory is checked, through the
 * bundle reader (containment rule, size caps); so is every file it loads by path (patches,
 * transformers, openapi, ...) that names a URL. `helmCharts` (helm inflation, which downloads
 * charts) is refused the same way; exec and container plugins are refused by kustomize itself,
 * which runs without --enable-alpha-plugins and --enable-exec.
 */
import path from 'node:path';
import type { ContentTree } from '../../util/content-tree.ts';
import type { HoistError } from '../../util/errors.ts';
import { parseYamlStream } from '../yaml/stream.ts';
import { isJsonObject, type JsonObject } from '../yaml/values.ts';
import { ProcessCode, processError } from '../errors.ts';

/** the names kustomize looks for in a directory, in its order */
export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;

/** an entry that names something on a network: a URL, scp-like git, or a host/path as kustomize reads one */
export function looksRemote(entry: string): boolean {
  return (
    /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ||
    /^[^/]+@[^/]+:/.test(entry) ||
    /^(git::|github\.com\/|gitlab\.com\/|bitbucket\.org\/)/.test(entry) ||
    /[?&]ref=/.test(entry) ||
    entry.includes('//')
  );
}

/** `dir/entry` inside the tree, or undefined when it would leave it */
function joinInTree(dir: string, entry: string): string | undefined {
  const joined = path.posix.normalize(path.posix.join(dir === '' ? '.' : dir, entry));
  if (joined === '..' || joined.startsWith('../') || path.posix.isAbsolute(entry)) return undefined;
  return joined === '.' ? '' : joined.replace(/\/$/, '');
}

/** the kustomization file of a directory of the tree, "" dir for the root; undefined when it has none */
export async function kustomizationFile(bundle: ContentTree, dir: string): Promise<string | undefined> {
  for (const name of KUSTOMIZATION_FILES) {
    const rel = dir === '' ? name : `${dir}/${name}`;
    if (await bundle.resolveFile(rel)) return rel;
  }
  return undefined;
}

function stringList(k: JsonObject, field: string): string[] {
  const v = k[field];
  return Array.isArray(v) ? v.filter((e): e is string => typeof e === 'string') : [];
}

/**
 * Checks the kustomization in `dir` and every kustomization it reaches; throws one HoistError
 * listing every problem. `dir` is relative to the tree ("" the root).
 */
export async function checkKustomizations(bundle: ContentTree, dir: string): Promise<void> {
  const problems: HoistError[] = [];
  const seen = new Set<string>();
  const visit = async (d: string, from: string | undefined): Promise<void> => {
    if (seen.has(d)) return;
    seen.add(d);
    const file = await kustomizationFile(bundle, d);
    if (!file) {
      const where = d === '' ? 'the bundle root' : JSON.stringify(d);
      problems.push(
        processError(
          `${where} has no kustomization (${KUSTOMIZATION_FILES.join(', ')})${from ? `; referred to by ${from}` : ''}`,
          ProcessCode.KustomizationNotFound,
          d || '.',
        ),
      );
      return;
    }
    const docs = parseYamlStream(await bundle.readText(file), file).documents;
    const k = docs[0]?.value;
    if (!isJsonObject(k)) {
      problems.push(processError(`${file} is not a kustomization (not a map)`, ProcessCode.InvalidKustomization, file));
      return;
    }
    if ((Array.isArray(k.helmCharts) && k.helmCharts.length > 0) || k.helmGlobals !== undefined) {
      problems.push(
        processError(
          `${file}: helmCharts are not inflated (kustomize would download the chart); install the chart with format: helm`,
          ProcessCode.UnsupportedKustomization,
          file,
        ),
      );
    }
    // files kustomize loads by path, which it would also fetch from a URL
    const loaded = [
      ...['generators', 'transformers', 'validators', 'crds', 'configurations', 'patchesStrategicMerge'].flatMap((field) =>
        stringList(k, field).map((entry) => ({ field, entry })),
      ),
      ...(Array.isArray(k.patches) ? k.patches : []).flatMap((p) =>
        isJsonObject(p) && typeof p.path === 'string' ? [{ field: 'patches', entry: p.path }] : [],
      ),
      ...(isJsonObject(k.openapi) && typeof k.openapi.path === 'string' ? [{ field: 'openapi', entry: k.openapi.path }] : []),
    ];
    for (const { field, entry } of loaded) {
      // an inline config or patch (several lines) is not a location
      if (!entry.includes('\n') && looksRemote(entry)) {
        problems.push(
          processError(
            `${file}: remote file ${JSON.stringify(entry)} (${field}) is refused: Hoist builds only the bundle's own files, without network`,
            ProcessCode.RemoteBase,
            `${file} ${field} ${entry}`,
          ),
        );
      }
    }
    for (const field of ['resources', 'bases', 'components']) {
      for (const entry of stringList(k, field)) {
        const subject = `${file} ${field} ${entry}`;
        if (looksRemote(entry)) {
          problems.push(
            processError(
              `${file}: remote base ${JSON.stringify(entry)} (${field}) is refused: Hoist builds only the bundle's own files, without network`,
              ProcessCode.RemoteBase,
              subject,
            ),
          );
          continue;
        }
        const target = joinInTree(d, entry);
        if (target === undefined) {
          problems.push(processError(`${file}: ${field} entry ${JSON.stringify(entry)} leaves the bundle`, ProcessCode.RemoteBase, subject));
          continue;
        }
        if (await bundle.list(target)) {
          await visit(target, file);
        } else if (!(await bundle.resolveFile(target))) {
          // kustomize would try a missing entry as a remote base: refused before it can
          problems.push(
            processError(
              `${file}: ${field} entry ${JSON.stringify(entry)} is not a file or directory of the bundle (remote bases are not fetched)`,
              ProcessCode.RemoteBase,
              subject,
            ),
          );
        }
      }
    }
  };
  await visit(dir, undefined);
  if (problems.length === 1) throw problems[0]!;
  if (problems.length > 1)
    throw processError(`${problems.length} problems: ${problems.map((p) => p.message).join('; ')}`, problems[0]!.code as ProcessCode, problems[0]!.subject);
}
