/**
 * `spec.sources[].image.verify` for one resolved digest: reads the trusted keys, finds the
 * cosign signatures in the repository that served the manifest, and decides. Runs at resolve,
 * before any layer is downloaded; a refusal (policy Enforce) is a terminal resolve error with
 * reason VerificationFailed naming the image, so nothing of the content reaches the store or the
 * cluster and the installed revision stays. Under policy Warn the failure is recorded in
 * `status.resolvedSources[].verification` and the content is installed.
 */
import type { ImageVerification, SourceVerification } from '../../../../api/v1alpha2/types.ts';
import { FailureReason } from '../../../util/errors.ts';
import type { PublicKeySet } from '../../source.ts';
import type { OperationContext, RegistryClient } from '../client.ts';
import type { ImageReference } from '../reference.ts';
import { parsePublicKeys, VerificationFailure, verifyCandidates, type TrustedKey } from './cosign.ts';
import { findSignatures } from './signatures.ts';
import { SourceCode, sourceError } from '../../errors.ts';

export async function verifyImage(
  client: RegistryClient,
  repo: ImageReference,
  digest: string,
  verify: ImageVerification,
  keySet: PublicKeySet,
  op: OperationContext,
  subject: string,
): Promise<SourceVerification> {
  const policy = verify.policy ?? 'Enforce';
  const keys = trustedKeys(keySet);
  const candidates = await findSignatures(client, repo, digest, op);
  try {
    const ok = verifyCandidates(candidates, digest, keys);
    return {
      provider: 'cosign',
      policy,
      result: 'Verified',
      digest,
      key: ok.key.label,
      keyFingerprint: ok.key.fingerprint,
      signature: ok.manifest,
      via: ok.via,
    };
  } catch (e) {
    if (!(e instanceof VerificationFailure)) throw e;
    if (policy === 'Warn') return { provider: 'cosign', policy, result: 'Failed', digest, reason: e.code, message: e.message.slice(0, 1000) };
    throw sourceError(`cosign verification failed (${e.code}): ${e.message}; nothing was unpacked`, {
      stage: 'resolve',
      reason: FailureReason.VerificationFailed,
      code: e.code,
      subject,
      terminal: true,
    });
  }
}

function trustedKeys(set: PublicKeySet): TrustedKey[] {
  const keys = set.entries.flatMap((e) => parsePublicKeys(e.pem, `${set.from} key ${e.name}`));
  if (keys.length === 0) {
    throw sourceError(`${set.from} has no *.pub entry holding a PEM public key`, {
      stage: 'spec',
      code: SourceCode.BadPublicKey,
      subject: set.from,
      terminal: true,
    });
  }
  return keys;
}
