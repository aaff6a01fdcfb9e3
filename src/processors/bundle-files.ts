/**
 * How processors read a bundle: every file through one ContentTree (src/util/content-tree.ts),
 * so plain, registry-v1 and helm apply the same rule — a path resolves inside the tree (links
 * followed as the kernel would, never out of it), ends at a regular file, and stays under the
 * size caps below. Errors are terminal process errors naming the bundle-relative path.
 */
import { ContentTree, type TreeLimits } from '../util/content-tree.ts';

const MiB = 1024 * 1024;

/**
 * Caps per bundle read by a processor. A Kubernetes object is at most 1.5 MiB in etcd, so 16 MiB
 * per file is generous for any manifest file; 64 MiB per bundle is the helm processor's rendered
 * output cap too, so every format has the same bound on what it parses (the controller's memory
 * limit is 1 GiB and parsed YAML takes several times its text).
 */
export const BUNDLE_LIMITS: Readonly<Required<TreeLimits>> = Object.freeze({ maxFileBytes: 16 * MiB, maxTotalBytes: 64 * MiB });

/** A reader of the content tree at `root` for the named processor ("plain processor", ...). */
export function openBundle(root: string, who: string, limits: Partial<TreeLimits> = {}): ContentTree {
  return new ContentTree(root, { stage: 'process', who, limits: { ...BUNDLE_LIMITS, ...limits } });
}
