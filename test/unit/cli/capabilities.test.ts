/** The capability flags of `hoist render` / `hoist diff` and what a preview assumes from them. */
import { describe, expect, it } from 'vitest';
import { defaultKubeVersion, parseCapabilityFlags, previewCapabilities } from '../../../src/cli/capabilities.ts';
import { builtinApiVersions } from '../../../src/kube/builtin-scopes.ts';

describe('parseCapabilityFlags', () => {
  it.each([
    [undefined, undefined, {}],
    ['1.30', undefined, { kubeVersion: 'v1.30' }],
    ['v1.30.2', undefined, { kubeVersion: 'v1.30.2' }],
    ['1.31.0-rc.1', undefined, { kubeVersion: 'v1.31.0-rc.1' }],
    [
      undefined,
      ['apps/v1', 'monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor', ' v1 '],
      { apiVersions: ['apps/v1', 'monitoring.coreos.com/v1', 'monitoring.coreos.com/v1/ServiceMonitor', 'v1'] },
    ],
  ])('%s %j → %j', (kube, apis, want) => {
    expect(parseCapabilityFlags(kube, apis)).toEqual(want);
  });

  it.each([
    ['latest', undefined, /--kube-version "latest"/],
    ['1.30.x', undefined, /--kube-version/],
    [undefined, ['apps'], /--api-versions "apps"/],
    [undefined, ['Apps/V1'], /--api-versions "Apps\/V1"/],
    [undefined, ['a/v1/Kind/extra'], /--api-versions/],
  ])('refuses %s %j', (kube, apis, message) => {
    expect(() => parseCapabilityFlags(kube, apis)).toThrow(message);
  });
});

describe('previewCapabilities', () => {
  const discovery = { serverVersion: async () => 'v1.33.1', apiVersions: async () => ['v1', 'apps/v1'] };

  it('offline without flags: the tools version, no API list (the processors keep their defaults)', async () => {
    const c = previewCapabilities({});
    expect(await c.cluster.serverVersion()).toBe(defaultKubeVersion());
    expect(await c.cluster.apiVersions()).toBeUndefined();
    expect(c.assumed).toMatch(/^no cluster: assumed Kubernetes v\d+\.\d+\.\d+ \(the version Hoist's tools are built at/);
  });

  it('offline with --api-versions: the built-in ones and those', async () => {
    const c = previewCapabilities({ kubeVersion: 'v1.28.0', apiVersions: ['example.com/v1'] });
    expect(await c.cluster.serverVersion()).toBe('v1.28.0');
    expect(await c.cluster.apiVersions()).toEqual([...builtinApiVersions(), 'example.com/v1']);
    expect(c.assumed).toContain('Kubernetes v1.28.0 (--kube-version)');
  });

  it('with a cluster: its facts, the flags replacing the version and adding API versions', async () => {
    const plain = previewCapabilities({}, discovery);
    expect(await plain.cluster.serverVersion()).toBe('v1.33.1');
    expect(await plain.cluster.apiVersions()).toEqual(['v1', 'apps/v1']);
    expect(plain.assumed).toBeUndefined();
    const flagged = previewCapabilities({ kubeVersion: 'v1.35.0', apiVersions: ['apps/v1', 'example.com/v1'] }, discovery);
    expect(await flagged.cluster.serverVersion()).toBe('v1.35.0');
    expect(await flagged.cluster.apiVersions()).toEqual(['v1', 'apps/v1', 'example.com/v1']);
    expect(flagged.assumed).toContain("instead of the cluster's");
  });
});
