/**
 * Keyed cosign signature verification, in node:crypto (no cosign binary at run time).
 *
 * What cosign writes (`cosign sign --key`): a signature manifest whose layers each hold one
 * "simple signing" payload (media type `application/vnd.dev.cosign.simplesigning.v1+json`) and,
 * in the layer's annotation `dev.cosignproject.cosign/signature`, the base64 signature over the
 * payload's exact bytes: ECDSA (ASN.1 DER) or RSA PKCS#1 v1.5 over SHA-256, or Ed25519ph (cosign
 * v2; pure Ed25519 from older cosign is accepted too).
 * The payload names the signed manifest digest in `critical.image.docker-manifest-digest` and
 * says `critical.type: cosign container image signature`.
 *
 * A layer counts when its signature verifies with one of the configured keys AND its payload is
 * a cosign image signature for exactly the resolved digest. The signature is checked first, so
 * everything said about a payload is said about content the key holder signed.
 *
 * Keyless signatures (Fulcio certificates, Rekor bundles) are not supported: they need the public
 * Sigstore services or a private instance on the network. Pure: no I/O.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { HoistError } from '../../../util/errors.ts';
import { verifyEd25519 } from './ed25519.ts';
import { SourceCode, sourceError } from '../../errors.ts';

export const COSIGN_SIMPLESIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const COSIGN_SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
export const COSIGN_PAYLOAD_TYPE = 'cosign container image signature';

/** One trusted public key, parsed. */
export interface TrustedKey {
  /** where it came from, for status and messages: `Secret ns/name key cosign.pub` */
  label: string;
  /** `sha256:<hex>` of the SubjectPublicKeyInfo DER */
  fingerprint: string;
  key: KeyObject;
}

/** One signature layer of a signature manifest, its payload already read and digest-checked. */
export interface SignatureCandidate {
  /** digest of the signature manifest it belongs to */
  manifest: string;
  via: 'tag' | 'referrers';
  payload: Buffer;
  /** the base64 `dev.cosignproject.cosign/signature` annotation; undefined when the layer has none */
  signature: string | undefined;
}

export interface VerifiedSignature {
  key: TrustedKey;
  manifest: string;
  via: 'tag' | 'referrers';
}

/**
 * Why verification failed, in the order a person should look: no signature at all, signatures
 * but none by a trusted key, a trusted signature over something else, or an unreadable payload.
 */
export type VerificationCode =
  | typeof SourceCode.SignatureNotFound
  | typeof SourceCode.SignatureUntrusted
  | typeof SourceCode.SignatureDigestMismatch
  | typeof SourceCode.SignaturePayloadInvalid;

export class VerificationFailure extends Error {
  constructor(
    readonly code: VerificationCode,
    message: string,
  ) {
    super(message);
    this.name = 'VerificationFailure';
  }
}

const PEM_PUBLIC_KEY = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g;

/**
 * Parses the PEM public keys of one Secret/ConfigMap entry (one or more `PUBLIC KEY` blocks).
 * An entry without a key, or with a key node:crypto cannot read, is a terminal spec error.
 */
export function parsePublicKeys(pem: string, label: string): TrustedKey[] {
  const blocks = pem.match(PEM_PUBLIC_KEY) ?? [];
  if (blocks.length === 0) throw badKey(label, 'holds no PEM "PUBLIC KEY" block');
  return blocks.map((block, i) => {
    let key: KeyObject;
    try {
      key = createPublicKey(block);
    } catch (e) {
      throw badKey(label, `holds an unreadable public key: ${e instanceof Error ? e.message.toLowerCase() : String(e)}`);
    }
    const type = key.asymmetricKeyType;
    if (type !== 'ec' && type !== 'rsa' && type !== 'ed25519') throw badKey(label, `holds a ${type ?? 'unknown'} key; cosign keys are ECDSA, RSA or ed25519`);
    const fingerprint = `sha256:${createHash('sha256')
      .update(key.export({ type: 'spki', format: 'der' }))
      .digest('hex')}`;
    return { label: blocks.length > 1 ? `${label} #${i + 1}` : label, fingerprint, key };
  });
}

function badKey(label: string, why: string): HoistError {
  return sourceError(`${label} ${why}`, { stage: 'spec', code: SourceCode.BadPublicKey, subject: label, terminal: true });
}

/** True when `signature` (base64) is `key`'s signature over `payload`, the way cosign signs. */
export function signatureMatches(payload: Buffer, signature: string, key: KeyObject): boolean {
  const sig = Buffer.from(signature, 'base64');
  if (sig.length === 0) return false;
  try {
    // cosign v2 signs with Ed25519ph for ed25519 keys, older cosign with pure Ed25519 (which
    // node:crypto has); ECDSA and RSA (PKCS#1 v1.5) sign the payload's SHA-256
    if (key.asymmetricKeyType === 'ed25519') return verifyEd25519(payload, sig, key, true) || verify(null, payload, key, sig);
    if (key.asymmetricKeyType === 'ec') return verify('sha256', payload, { key, dsaEncoding: 'der' }, sig);
    return verify('sha256', payload, key, sig);
  } catch {
    // a malformed signature (wrong length, bad DER) simply does not verify
    return false;
  }
}

/**
 * Checks that a payload is a cosign image signature for `digest`. Throws a VerificationFailure
 * (`signature-payload-invalid` or `signature-digest-mismatch`) otherwise.
 */
export function checkPayload(payload: Buffer, digest: string): void {
  let doc: unknown;
  try {
    doc = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new VerificationFailure(SourceCode.SignaturePayloadInvalid, 'the signed payload is not JSON');
  }
  const critical = (doc as { critical?: { type?: unknown; image?: { 'docker-manifest-digest'?: unknown } } } | null)?.critical;
  if (typeof critical !== 'object' || critical === null)
    throw new VerificationFailure(SourceCode.SignaturePayloadInvalid, 'the signed payload has no "critical" section');
  if (critical.type !== COSIGN_PAYLOAD_TYPE) {
    throw new VerificationFailure(
      SourceCode.SignaturePayloadInvalid,
      `the signed payload's critical.type is ${JSON.stringify(critical.type ?? null)}, not "${COSIGN_PAYLOAD_TYPE}"`,
    );
  }
  const signed = critical.image?.['docker-manifest-digest'];
  if (typeof signed !== 'string')
    throw new VerificationFailure(SourceCode.SignaturePayloadInvalid, 'the signed payload names no critical.image.docker-manifest-digest');
  if (signed !== digest)
    throw new VerificationFailure(SourceCode.SignatureDigestMismatch, `a trusted key signed ${signed}, not the resolved manifest ${digest}`);
}

/**
 * The first candidate signed by one of `keys` whose payload is for `digest`. When there is none,
 * throws the most telling VerificationFailure: a trusted signature over other content beats an
 * unreadable trusted payload, which beats signatures by unknown keys, which beats no signature.
 */
export function verifyCandidates(candidates: readonly SignatureCandidate[], digest: string, keys: readonly TrustedKey[]): VerifiedSignature {
  if (candidates.length === 0) throw new VerificationFailure(SourceCode.SignatureNotFound, `no cosign signature found for ${digest}`);
  const rank: Record<VerificationCode, number> = {
    [SourceCode.SignatureNotFound]: 0,
    [SourceCode.SignatureUntrusted]: 1,
    [SourceCode.SignaturePayloadInvalid]: 2,
    [SourceCode.SignatureDigestMismatch]: 3,
  };
  let worst: VerificationFailure | undefined;
  for (const c of candidates) {
    const key = c.signature === undefined ? undefined : keys.find((k) => signatureMatches(c.payload, c.signature!, k.key));
    let failure: VerificationFailure;
    if (!key) {
      const names = keys.map((k) => k.label).join(', ');
      failure = new VerificationFailure(SourceCode.SignatureUntrusted, `${candidates.length} signature(s) found, none made by a trusted key (${names})`);
    } else {
      try {
        checkPayload(c.payload, digest);
        return { key, manifest: c.manifest, via: c.via };
      } catch (e) {
        if (!(e instanceof VerificationFailure)) throw e;
        failure = e;
      }
    }
    if (!worst || rank[failure.code] > rank[worst.code]) worst = failure;
  }
  throw worst!;
}
