import { rootCertificates } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { caBundleProblem } from '../../../../src/sources/transport/ca-bundle.ts';

// real certificates: two of Node's bundled roots
const [A, B] = [rootCertificates[0]!, rootCertificates[1]!];

describe('caBundleProblem', () => {
  it('accepts one certificate or a bundle of several, with text around them', () => {
    expect(caBundleProblem(A)).toBeUndefined();
    expect(caBundleProblem(`# corp roots\n${A}\n\n${B}\n`)).toBeUndefined();
  });

  it('names what is wrong: no PEM at all, or which certificate does not parse', () => {
    expect(caBundleProblem('')).toBe('holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
    expect(caBundleProblem('not a certificate')).toMatch(/holds no PEM certificate/);
    // a private key is not a CA
    expect(caBundleProblem('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n')).toMatch(/holds no PEM certificate/);
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----';
    expect(caBundleProblem(`${A}\n${broken}\n`)).toBe('certificate 2 of 2 does not parse as X.509');
  });
});
