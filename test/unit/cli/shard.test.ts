import { describe, expect, it } from 'vitest';
import { checkShard, shardLease, shardSelector } from '../../../src/cli/shard.ts';

describe('shards', () => {
  it('selects a shard by its label, the default shard by the label being absent', () => {
    expect(shardSelector('a')).toBe('core.rukpak.io/shard=a');
    expect(shardSelector(undefined)).toBe('!core.rukpak.io/shard');
    expect(shardSelector('')).toBe('!core.rukpak.io/shard');
  });

  it('ANDs the shard with a --selector', () => {
    expect(shardSelector('b', 'team=x,env in (prod)')).toBe('core.rukpak.io/shard=b,team=x,env in (prod)');
    expect(shardSelector('', 'team=x')).toBe('!core.rukpak.io/shard,team=x');
  });

  it('gives each shard its own Lease; the default shard keeps the unsharded name', () => {
    expect(shardLease('a')).toBe('hoist-controller-a');
    expect(shardLease('')).toBe('hoist-controller');
    expect(shardLease(undefined)).toBe('hoist-controller');
  });

  it('refuses names that cannot be a label value and a Lease name', () => {
    for (const ok of ['a', 'shard-1', '0', 'x'.repeat(46), '', undefined]) expect(() => checkShard(ok)).not.toThrow();
    for (const bad of ['A', 'a_b', '-a', 'a-', 'a.b', 'a b', 'x'.repeat(47), 'a,b']) expect(() => checkShard(bad)).toThrow(/bad --shard/);
  });
});
