/**
 * Ed25519 verification (RFC 8032 §5.1.7) with the Ed25519ph variant, which node:crypto does not
 * offer: cosign v2 signs with Ed25519ph (SHA-512 of the message, domain-separated) for ed25519
 * keys, older cosign with pure Ed25519. Verification only: no secret is handled, so constant time
 * does not matter. BigInt arithmetic on extended twisted Edwards coordinates; SHA-512 from
 * node:crypto. Checked against RFC 8032's Ed25519ph test vector and node's own pure Ed25519
 * (test/unit/sources/image/cosign-verify.test.ts) and against the real cosign's signatures.
 */
import { createHash, type KeyObject } from 'node:crypto';

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const mod = (a: bigint, m = P): bigint => ((a % m) + m) % m;

function pow(base: bigint, exp: bigint): bigint {
  let r = 1n;
  let b = mod(base);
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) r = (r * b) % P;
    b = (b * b) % P;
  }
  return r;
}

const inv = (a: bigint): bigint => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
const SQRT_M1 = pow(2n, (P - 1n) / 4n);

/** extended coordinates (X:Y:Z:T), x = X/Z, y = Y/Z, xy = T/Z */
type Point = [bigint, bigint, bigint, bigint];

function add([x1, y1, z1, t1]: Point, [x2, y2, z2, t2]: Point): Point {
  const a = mod((y1 - x1) * (y2 - x2));
  const b = mod((y1 + x1) * (y2 + x2));
  const c = mod(t1 * 2n * D * t2);
  const d = mod(z1 * 2n * z2);
  const e = b - a;
  const f = d - c;
  const g = d + c;
  const h = b + a;
  return [mod(e * f), mod(g * h), mod(f * g), mod(e * h)];
}

function multiply(point: Point, scalar: bigint): Point {
  let r: Point = [0n, 1n, 1n, 0n];
  let q = point;
  for (let s = scalar; s > 0n; s >>= 1n) {
    if (s & 1n) r = add(r, q);
    q = add(q, q);
  }
  return r;
}

const equal = ([x1, y1, z1]: Point, [x2, y2, z2]: Point): boolean => mod(x1 * z2) === mod(x2 * z1) && mod(y1 * z2) === mod(y2 * z1);

const littleEndian = (bytes: Buffer): bigint => BigInt(`0x${Buffer.from(bytes).reverse().toString('hex') || '0'}`);

/** RFC 8032 §5.1.3 point decoding; undefined for an invalid encoding */
function decode(bytes: Buffer): Point | undefined {
  if (bytes.length !== 32) return undefined;
  const sign = bytes[31]! >> 7;
  const copy = Buffer.from(bytes);
  copy[31] = copy[31]! & 0x7f;
  const y = littleEndian(copy);
  if (y >= P) return undefined;
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n));
  const vx2 = mod(v * x * x);
  if (vx2 === mod(-u)) x = mod(x * SQRT_M1);
  else if (vx2 !== u) return undefined;
  if (x === 0n && sign === 1) return undefined;
  if (Number(x & 1n) !== sign) x = P - x;
  return [x, y, 1n, mod(x * y)];
}

const BASE = decode(Buffer.from('5866666666666666666666666666666666666666666666666666666666666666', 'hex'))!;

/** The 32-byte public key of an ed25519 KeyObject. */
function rawKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  return Buffer.from(jwk.x ?? '', 'base64url');
}

/**
 * Verifies an Ed25519 signature: `prehash` true is Ed25519ph (RFC 8032 §5.1, phflag 1, empty
 * context) as cosign v2 makes it, false is pure Ed25519.
 */
export function verifyEd25519(message: Buffer, signature: Buffer, key: KeyObject, prehash: boolean): boolean {
  if (signature.length !== 64) return false;
  const publicKey = rawKey(key);
  const a = decode(publicKey);
  const r = decode(signature.subarray(0, 32));
  const s = littleEndian(signature.subarray(32));
  if (!a || !r || s >= L) return false;
  const h = createHash('sha512');
  if (prehash) h.update(Buffer.concat([Buffer.from('SigEd25519 no Ed25519 collisions'), Buffer.from([1, 0])]));
  h.update(signature.subarray(0, 32))
    .update(publicKey)
    .update(prehash ? createHash('sha512').update(message).digest() : message);
  const k = mod(littleEndian(h.digest()), L);
  return equal(multiply(BASE, s), add(r, multiply(a, k)));
}
