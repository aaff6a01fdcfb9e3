/**
 * Generates the PKI a local control plane needs with the openssl CLI: a CA, the API server's
 * serving certificate (loopback and in-cluster names), an admin client certificate in
 * system:masters, and the service-account signing key. ECDSA P-256 keeps generation fast.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd });
}

async function keyPair(dir: string, name: string): Promise<void> {
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
}

async function signed(dir: string, name: string, subject: string, ext: string): Promise<void> {
  await keyPair(dir, name);
  await openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '365',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
}

/** `extraIps`: more addresses the API server is reached at (the real node's bridge gateway). */
export async function generatePki(dir: string, extraIps: readonly string[] = []): Promise<Pki> {
  await keyPair(dir, 'ca');
  await openssl(['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=hoist-dev-ca', '-days', '365', '-sha256', '-out', 'ca.crt'], dir);
  const sans = [
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'IP:127.0.0.1',
    'IP:10.96.0.1',
    ...extraIps.map((ip) => `IP:${ip}`),
  ];
  await signed(
    dir,
    'serving',
    '/CN=kube-apiserver',
    `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`,
  );
  await signed(dir, 'admin', '/O=system:masters/CN=hoist-admin', 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n');
  await keyPair(dir, 'sa');
  await openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  const f = (n: string) => join(dir, n);
  return {
    caCert: f('ca.crt'),
    caKey: f('ca.key'),
    servingCert: f('serving.crt'),
    servingKey: f('serving.key'),
    adminCert: f('admin.crt'),
    adminKey: f('admin.key'),
    saKey: f('sa.key'),
    saPub: f('sa.pub'),
  };
}
