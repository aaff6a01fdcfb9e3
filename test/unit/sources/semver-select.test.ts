/** Semver selection of tags (image.semver, git.ref.semver): Masterminds' range syntax and pre-release rule, as Flux's ref.semver. */
import { describe, expect, it } from 'vitest';
import { admits, highestMatching, semverRangeProblem, tagVersion } from '../../../src/sources/semver-select.ts';

const TAGS = ['1.8.4', 'v1.9.0', '1.9.1', '2.0.0-rc.1', 'latest', 'main', '1.9', 'sha-abc123', '3.0.0-alpha.1'];

describe('highestMatching', () => {
  it.each([
    ['>=1.9 <2.0', '1.9.1'],
    ['>=1.9, <2.0', '1.9.1'],
    ['~1.9', '1.9.1'],
    ['1.8.x', '1.8.4'],
    ['^1', '1.9.1'],
    ['1.8.4 - 1.9.0', 'v1.9.0'],
    ['>=2.0.0-0 <3', '2.0.0-rc.1'],
    ['>=1.0.0-0', '3.0.0-alpha.1'],
    ['<1.9 || >=2.0.0-rc.0 <2.1', '2.0.0-rc.1'],
    ['*', '1.9.1'],
    ['>=4', undefined],
  ])('%s → %s', (range, tag) => {
    expect(highestMatching(TAGS, range)?.tag).toBe(tag);
  });

  it('admits pre-releases only for an or-group that names one, then of any version (Masterminds v3)', () => {
    expect(admits('>=1.9 <2.0', '2.0.0-rc.1')).toBe(false);
    expect(admits('>=1.9.0 <3.0.0', '2.0.0-rc.1')).toBe(false);
    expect(admits('>=1.9.0-0 <3.0.0', '2.0.0-rc.1')).toBe(true);
    expect(admits('>=1.0.0 || >=2.0.0-0', '2.0.0-rc.1')).toBe(true);
  });
});

describe('tags and ranges', () => {
  it.each([
    ['1.2.3', '1.2.3'],
    ['v1.2.3', '1.2.3'],
    ['1.2.3-rc.1+build.5', '1.2.3-rc.1'],
    ['1.2', undefined],
    ['V1.2.3', undefined],
    ['latest', undefined],
  ])('tag %s is version %s', (tag, version) => {
    expect(tagVersion(tag)).toBe(version);
  });

  it.each(['', '  ', 'latest', '>=1.9 <2.0 ||| 3', 'one'])('refuses the range %j', (range) => {
    expect(semverRangeProblem(range)).toBeDefined();
  });
  it.each(['>=1.9 <2.0', '~1.9', '1.x', '>=1.9, <2.0', '^2 || ^3'])('accepts the range %j', (range) => {
    expect(semverRangeProblem(range)).toBeUndefined();
  });
});
