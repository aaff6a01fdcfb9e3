/**
 * Checks a PEM CA bundle before anything trusts it: every `BEGIN CERTIFICATE` block must parse
 * as an X.509 certificate, and there must be at least one. A bundle that does not parse would
 * otherwise surface later as a vague TLS failure (or, for git, as curl's "error setting
 * certificate file"), far from the Secret or ConfigMap that holds it. Pure.
 */
import { X509Certificate } from 'node:crypto';

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Why `pem` is not a usable CA bundle, or undefined when every certificate in it parses. */
export function caBundleProblem(pem: string): string | undefined {
  const blocks = pem.match(BLOCK) ?? [];
  if (blocks.length === 0) return 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)';
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch {
      return `certificate ${i + 1} of ${blocks.length} does not parse as X.509`;
    }
  }
  return undefined;
}
