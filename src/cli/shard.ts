/**
 * Shards (as Flux's sharding): `hoist run --shard NAME` reconciles only BundleDeployments
 * labelled `core.rukpak.io/shard: NAME`, the default shard (no --shard, or --shard '') only
 * unlabelled ones, so a BundleDeployment belongs to exactly one shard. Each shard elects its own
 * leader on its own Lease.
 */
export const SHARD_LABEL = 'core.rukpak.io/shard';
const LEASE = 'hoist-controller';

// a label value that is also a DNS label, so `hoist-controller-<shard>` is a valid Lease name
const SHARD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_SHARD = 63 - LEASE.length - 1;

/** throws a one-line error naming the rule when the shard name cannot be a label value and a Lease name */
export function checkShard(shard: string | undefined): void {
  if (!shard) return;
  if (!SHARD_NAME.test(shard) || shard.length > MAX_SHARD) {
    throw new Error(
      `bad --shard ${JSON.stringify(shard)}: lowercase letters, digits and '-', starting and ending with a letter or digit, at most ${MAX_SHARD} characters`,
    );
  }
}

/** the label selector of a shard's BundleDeployments, AND-ed with the user's own --selector */
export function shardSelector(shard: string | undefined, selector?: string): string {
  const own = shard ? `${SHARD_LABEL}=${shard}` : `!${SHARD_LABEL}`;
  return selector ? `${own},${selector}` : own;
}

/** the shard's leader-election Lease: the default shard keeps the unsharded name */
export function shardLease(shard: string | undefined): string {
  return shard ? `${LEASE}-${shard}` : LEASE;
}
