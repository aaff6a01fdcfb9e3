/**
 * The graph `spec.dependsOn` draws between BundleDeployments: whether a BundleDeployment is on a
 * cycle (reported, never waited on: a cycle would otherwise hold its members forever) and whether
 * one reaches another (uninstall order skips dependents on a cycle with the BundleDeployment being
 * deleted, which would otherwise wait for each other). Walks the informer cache through
 * `dependsOn`, each BundleDeployment at most once. Pure.
 */

/** the names `name` depends on; undefined when no such BundleDeployment is known */
export type DependsOnOf = (name: string) => readonly string[] | undefined;

/**
 * The shortest cycle through `start`, as names from `start` back to `start` (`[a, b, a]`), or
 * undefined when `start` is on none. Breadth-first over what `start` depends on, so the cycle
 * named is the same on every reconcile.
 */
export function cycleThrough(start: string, dependsOn: DependsOnOf): string[] | undefined {
  const parent = new Map<string, string>();
  const queue: string[] = [];
  for (const next of dependsOn(start) ?? []) {
    if (next === start) return [start, start];
    if (!parent.has(next)) {
      parent.set(next, start);
      queue.push(next);
    }
  }
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i]!;
    for (const next of dependsOn(at) ?? []) {
      if (next === start) {
        const path = [at];
        for (let p = parent.get(at); p !== undefined && p !== start; p = parent.get(p)) path.push(p);
        return [start, ...path.reverse(), start];
      }
      if (!parent.has(next)) {
        parent.set(next, at);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** whether `from` depends on `to`, directly or through others */
export function reaches(from: string, to: string, dependsOn: DependsOnOf): boolean {
  const seen = new Set<string>([from]);
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    for (const next of dependsOn(queue[i]!) ?? []) {
      if (next === to) return true;
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return false;
}
