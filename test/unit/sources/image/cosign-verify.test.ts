/**
 * The keyed cosign verifier (src/sources/image/verify/cosign.ts) on signatures made here with
 * node:crypto exactly as cosign makes them: ECDSA P-256 (DER) and RSA PKCS#1 v1.5 over SHA-256,
 * and pure ed25519, over the simple-signing payload bytes. The same code is exercised with
 * signatures made by the real cosign binary in test/e2e/image-verify.test.ts.
 */
import { createHash, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkPayload,
  parsePublicKeys,
  signatureMatches,
  VerificationFailure,
  verifyCandidates,
  type SignatureCandidate,
} from '../../../../src/sources/image/verify/cosign.ts';
import { verifyEd25519 } from '../../../../src/sources/image/verify/ed25519.ts';
import { isHoistError } from '../../../../src/util/errors.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;

function payload(digest: string, type = 'cosign container image signature'): Buffer {
  return Buffer.from(
    JSON.stringify({ critical: { identity: { 'docker-reference': '127.0.0.1:5000/app' }, image: { 'docker-manifest-digest': digest }, type }, optional: null }),
  );
}

function pair(kind: 'ec' | 'rsa' | 'ed25519'): { privateKey: KeyObject; pem: string } {
  const { privateKey, publicKey } =
    kind === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : kind === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ed25519');
  return { privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

function cosignSign(data: Buffer, key: KeyObject): string {
  return sign(key.asymmetricKeyType === 'ed25519' ? null : 'sha256', data, key).toString('base64');
}

function candidate(data: Buffer, signature: string | undefined): SignatureCandidate {
  return { manifest: `sha256:${createHash('sha256').update(data).digest('hex')}`, via: 'tag', payload: data, signature };
}

function failureOf(f: () => unknown): VerificationFailure {
  try {
    f();
  } catch (e) {
    if (e instanceof VerificationFailure) return e;
    throw e;
  }
  throw new Error('expected a verification failure');
}

describe('cosign keyed verification', () => {
  for (const kind of ['ec', 'rsa', 'ed25519'] as const) {
    it(`accepts a ${kind} signature over the payload for the resolved digest, naming key and fingerprint`, () => {
      const { privateKey, pem } = pair(kind);
      const keys = parsePublicKeys(pem, 'Secret ns/keys key cosign.pub');
      const data = payload(DIGEST);
      const ok = verifyCandidates([candidate(data, cosignSign(data, privateKey))], DIGEST, keys);
      expect(ok.key.label).toBe('Secret ns/keys key cosign.pub');
      const der = keys[0]!.key.export({ type: 'spki', format: 'der' });
      expect(ok.key.fingerprint).toBe(`sha256:${createHash('sha256').update(der).digest('hex')}`);
    });
  }

  it('accepts when any of several keys matches, and among several signatures any one', () => {
    const a = pair('ec');
    const b = pair('ed25519');
    const keys = [...parsePublicKeys(`${a.pem}\n${b.pem}`, 'ConfigMap ns/keys key team.pub')];
    expect(keys.map((k) => k.label)).toEqual(['ConfigMap ns/keys key team.pub #1', 'ConfigMap ns/keys key team.pub #2']);
    const data = payload(DIGEST);
    const stranger = pair('ec');
    const ok = verifyCandidates([candidate(data, cosignSign(data, stranger.privateKey)), candidate(data, cosignSign(data, b.privateKey))], DIGEST, keys);
    expect(ok.key.label).toBe('ConfigMap ns/keys key team.pub #2');
  });

  it('refuses: no signature, another key, a signature over another digest, a payload that is not a cosign image signature', () => {
    const { privateKey, pem } = pair('ec');
    const keys = parsePublicKeys(pem, 'Secret ns/keys key cosign.pub');
    expect(failureOf(() => verifyCandidates([], DIGEST, keys)).code).toBe('signature-not-found');

    const data = payload(DIGEST);
    const other = pair('ec');
    const untrusted = failureOf(() => verifyCandidates([candidate(data, cosignSign(data, other.privateKey))], DIGEST, keys));
    expect(untrusted.code).toBe('signature-untrusted');
    expect(untrusted.message).toContain('Secret ns/keys key cosign.pub');
    // a layer without the signature annotation proves nothing
    expect(failureOf(() => verifyCandidates([candidate(data, undefined)], DIGEST, keys)).code).toBe('signature-untrusted');

    const forOther = payload(OTHER);
    const moved = failureOf(() => verifyCandidates([candidate(forOther, cosignSign(forOther, privateKey))], DIGEST, keys));
    expect(moved.code).toBe('signature-digest-mismatch');
    expect(moved.message).toContain(OTHER);

    const wrongType = payload(DIGEST, 'something else');
    expect(failureOf(() => verifyCandidates([candidate(wrongType, cosignSign(wrongType, privateKey))], DIGEST, keys)).code).toBe('signature-payload-invalid');
    const notJson = Buffer.from('not json');
    expect(failureOf(() => verifyCandidates([candidate(notJson, cosignSign(notJson, privateKey))], DIGEST, keys)).code).toBe('signature-payload-invalid');
  });

  it('reports the most telling failure among several signatures', () => {
    const { privateKey, pem } = pair('ec');
    const keys = parsePublicKeys(pem, 'k');
    const data = payload(DIGEST);
    const forOther = payload(OTHER);
    const other = pair('ec');
    const e = failureOf(() =>
      verifyCandidates([candidate(data, cosignSign(data, other.privateKey)), candidate(forOther, cosignSign(forOther, privateKey))], DIGEST, keys),
    );
    expect(e.code).toBe('signature-digest-mismatch');
  });

  it('a tampered payload or signature does not verify', () => {
    const { privateKey, pem } = pair('rsa');
    const [key] = parsePublicKeys(pem, 'k');
    const data = payload(DIGEST);
    const sig = cosignSign(data, privateKey);
    expect(signatureMatches(data, sig, key!.key)).toBe(true);
    expect(signatureMatches(payload(OTHER), sig, key!.key)).toBe(false);
    expect(signatureMatches(data, Buffer.from('garbage').toString('base64'), key!.key)).toBe(false);
    expect(signatureMatches(data, '', key!.key)).toBe(false);
  });

  it('checkPayload needs critical.type and critical.image.docker-manifest-digest', () => {
    expect(() => checkPayload(payload(DIGEST), DIGEST)).not.toThrow();
    expect(failureOf(() => checkPayload(Buffer.from('{"critical":{"type":"cosign container image signature"}}'), DIGEST)).code).toBe(
      'signature-payload-invalid',
    );
    expect(failureOf(() => checkPayload(Buffer.from('[]'), DIGEST)).code).toBe('signature-payload-invalid');
  });

  it('refuses key material that is not a usable public key, naming where it came from', () => {
    for (const bad of ['', 'hello', '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----']) {
      try {
        parsePublicKeys(bad, 'Secret ns/keys key cosign.pub');
        throw new Error('expected a failure');
      } catch (e) {
        expect(isHoistError(e) && e.code).toBe('bad-public-key');
        expect(isHoistError(e) && e.terminal).toBe(true);
        expect((e as Error).message).toContain('Secret ns/keys key cosign.pub');
      }
    }
    const dsa = generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 224 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(() => parsePublicKeys(dsa, 'k')).toThrow(/dsa key/);
  });
});

describe('Ed25519 (RFC 8032) with the Ed25519ph variant cosign v2 uses', () => {
  it('verifies RFC 8032 §7.3 test vector 1 (Ed25519ph, message "abc") and refuses it altered', () => {
    const pub = Buffer.from('ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf', 'hex');
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: pub.toString('base64url') }, format: 'jwk' });
    const sig = Buffer.from(
      '98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406',
      'hex',
    );
    expect(verifyEd25519(Buffer.from('abc'), sig, key, true)).toBe(true);
    expect(verifyEd25519(Buffer.from('abd'), sig, key, true)).toBe(false);
    expect(verifyEd25519(Buffer.from('abc'), sig, key, false)).toBe(false);
    const flipped = Buffer.from(sig);
    flipped[10] = flipped[10]! ^ 1;
    expect(verifyEd25519(Buffer.from('abc'), flipped, key, true)).toBe(false);
  });

  it('agrees with node:crypto on pure Ed25519', () => {
    for (let i = 0; i < 5; i++) {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const message = Buffer.from(`message ${i}`);
      const sig = sign(null, message, privateKey);
      expect(verifyEd25519(message, sig, publicKey, false)).toBe(true);
      expect(verifyEd25519(Buffer.from(`other ${i}`), sig, publicKey, false)).toBe(false);
    }
  });
});
