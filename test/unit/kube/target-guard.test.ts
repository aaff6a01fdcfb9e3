import { describe, expect, it } from 'vitest';
import { checkTarget, guardedLookup, managementServer, restrictionOf, RestrictedTargetError, type ManagementServer } from '../../../src/kube/target-guard.ts';

const MGMT: ManagementServer = { addresses: new Set(['127.0.0.1', '10.96.0.1']), port: '6443' };

describe('restrictionOf', () => {
  it.each([
    ['169.254.169.254', '443', 'link-local'],
    ['::ffff:169.254.169.254', '443', 'link-local'],
    ['fe80::1', '443', 'link-local'],
    ['fd00:ec2::254', '443', 'metadata'],
    ['100.100.100.200', '80', 'metadata'],
    ['127.0.0.1', '6443', 'management-api-server'],
    ['10.96.0.1', '6443', 'management-api-server'],
    ['127.0.0.1', '6444', undefined],
    ['10.0.0.7', '6443', undefined],
    ['192.168.1.10', '443', undefined],
  ])('%s port %s → %s', (address, port, want) => {
    expect(restrictionOf(address, port, MGMT)).toBe(want);
  });
});

describe('checkTarget', () => {
  it('refuses the in-cluster names of the management API server, metadata and link-local literals', async () => {
    for (const server of [
      'https://kubernetes.default.svc',
      'https://kubernetes.default.svc.cluster.local:443',
      'https://kubernetes',
      'https://169.254.169.254',
      'https://[fe80::1]:6443',
      'https://127.0.0.1:6443',
    ]) {
      const err = await checkTarget(server, MGMT).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, server).toBeInstanceOf(RestrictedTargetError);
      expect((err as Error).message).toContain('--allow-restricted-targets');
    }
  });

  it('resolves names: localhost on the management port is the management API server, on another port it is not', async () => {
    const mgmt = await managementServer('https://127.0.0.1:6443');
    await expect(checkTarget('https://localhost:6443', mgmt)).rejects.toMatchObject({ restriction: 'management-api-server' });
    await expect(checkTarget('https://localhost:7443', mgmt)).resolves.toBeUndefined();
  });

  it('the connection lookup refuses a name that resolves to a restricted address', async () => {
    const lookup = guardedLookup('6443', await managementServer('https://127.0.0.1:6443'));
    const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('localhost', { all: true }, (err) => resolve(err)));
    expect(refused?.code).toBe('ERESTRICTED');
    const allowed = await new Promise<unknown>((resolve) => guardedLookup('7443', MGMT)('localhost', {}, (err, address) => resolve(err ?? address)));
    expect(allowed).toMatch(/^(127\.0\.0\.1|::1)$/);
  });
});
