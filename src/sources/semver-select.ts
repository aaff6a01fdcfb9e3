/**
 * Picking a version by a semver range (`image.semver`, `git.ref.semver`), as Flux's `ref.semver`
 * does with Masterminds/semver: tags that are semantic versions (an optional leading `v`), the
 * highest one the range admits. Ranges are Masterminds' syntax — comparators joined by spaces or
 * commas (and), `||` (or), `1.2 - 1.4`, `1.x`, `~1.2`, `^1.2` — evaluated by the `semver`
 * package. Pre-releases as Masterminds v3 admits them: only for an or-group that names a
 * pre-release itself (`>=2.0.0-0`), and then pre-releases of any version.
 *
 * Pure.
 */
import semver from 'semver';

export interface SemverChoice {
  /** the tag as it is named (e.g. `v1.9.1`) */
  tag: string;
  /** the version it stands for (`1.9.1`) */
  version: string;
}

/** why `range` is not a range this module reads; undefined when it is */
export function semverRangeProblem(range: string): string | undefined {
  if (range.trim() === '') return 'is empty';
  for (const group of orGroups(range)) {
    if (semver.validRange(group) === null) return `${JSON.stringify(range)} is not a semver range (e.g. ">=1.9 <2.0", "~1.9", "1.x")`;
  }
  return undefined;
}

function orGroups(range: string): string[] {
  // Masterminds joins comparators with commas as well as spaces
  return range.split('||').map((g) => g.replaceAll(',', ' ').trim());
}

/** a tag as a version: strict semver with an optional leading v; undefined for any other tag */
export function tagVersion(tag: string): string | undefined {
  const v = tag.startsWith('v') ? tag.slice(1) : tag;
  return semver.valid(v) ?? undefined;
}

/** whether the range admits `version` (Masterminds v3's pre-release rule, see the module comment) */
export function admits(range: string, version: string): boolean {
  return orGroups(range).some((group) => semver.satisfies(version, group, { includePrerelease: /\d-[0-9A-Za-z]/.test(group) }));
}

/** The highest version among `tags` the range admits; ties (v1.0.0 and 1.0.0) go to the first listed. */
export function highestMatching(tags: Iterable<string>, range: string): SemverChoice | undefined {
  let best: SemverChoice | undefined;
  for (const tag of tags) {
    const version = tagVersion(tag);
    if (version === undefined || !admits(range, version)) continue;
    if (!best || semver.gt(version, best.version)) best = { tag, version };
  }
  return best;
}
