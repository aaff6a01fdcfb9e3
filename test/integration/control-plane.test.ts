import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubeconfigPath } from '../support/env.ts';

/** A GET with the kubeconfig's admin identity, with TLS verified against its CA. */
function get(path: string): Promise<{ status: number; body: string }> {
  const kc = parse(readFileSync(kubeconfigPath(), 'utf8'));
  const cluster = kc.clusters[0].cluster;
  const user = kc.users[0].user;
  const b = (s: string | undefined) => (s ? Buffer.from(s, 'base64') : undefined);
  return new Promise((resolve, reject) => {
    const req = request(
      `${cluster.server}${path}`,
      { ca: b(cluster['certificate-authority-data']), cert: b(user['client-certificate-data']), key: b(user['client-key-data']) },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('local control plane', () => {
  it('serves /readyz over verified TLS to the admin identity', async () => {
    const r = await get('/readyz');
    expect(r.status).toBe(200);
    expect(r.body).toBe('ok');
  });

  it('runs RBAC authorization', async () => {
    const r = await get('/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).rules[0].verbs).toContain('*');
  });
});
