/**
 * Paths in processor configuration and in what renderers print: a relative path as the CRD allows
 * it (config.helm.valuesFiles, config.kustomize.path, checked again for `hoist render`, which reads
 * an unchecked file), and the controller's directories replaced in a renderer's messages.
 */

/** why `path` is not a relative path inside the tree (no '..' segment, no leading '/', '/' separators); undefined when it is */
export function relativePathProblem(path: string): string | undefined {
  if (path === '') return 'is empty';
  if (path.startsWith('/')) return "must be a relative path; it must not start with '/'";
  if (/(^|\/)\.\.(\/|$)/.test(path)) return "must not contain a '..' path segment";
  if (path.includes('\\')) return "must use '/' as separator; backslashes are not allowed";
  return undefined;
}

/** Replaces absolute directories of the controller in a renderer's text (longest first, also their realpath forms). */
export function scrubPaths(text: string, replacements: ReadonlyArray<readonly [string, string]>): string {
  let out = text;
  for (const [dir, by] of [...replacements].sort((a, b) => b[0].length - a[0].length)) {
    if (dir === '' || dir === '/') continue;
    const d = dir.replace(/\/+$/, '');
    out = out.replaceAll(`${d}/`, by === '.' ? '' : `${by}/`).replaceAll(d, by);
  }
  return out;
}
