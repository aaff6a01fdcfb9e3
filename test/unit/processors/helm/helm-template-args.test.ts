import { describe, expect, it } from 'vitest';
import { helmTemplateArgs } from '../../../../src/processors/helm/helm-processor.ts';
import { helmEnv } from '../../../../src/processors/helm/run-helm.ts';

describe('helmTemplateArgs', () => {
  it('passes values only as files, in merge order, and every value in --flag=value form', () => {
    const args = helmTemplateArgs({
      releaseName: 'rel',
      chartDir: '/tree/chart',
      namespace: 'apps',
      valuesFiles: ['/tmp/h/values-0.json', '/tmp/h/values-1.json'],
      kubeVersion: 'v1.34.4',
      apiVersions: ['apps/v1', 'monitoring.coreos.com/v1'],
    });
    expect(args).toEqual([
      'template',
      'rel',
      '/tree/chart',
      '--namespace=apps',
      '--values=/tmp/h/values-0.json',
      '--values=/tmp/h/values-1.json',
      '--include-crds',
      '--skip-tests',
      '--kube-version=v1.34.4',
      '--api-versions=apps/v1',
      '--api-versions=monitoring.coreos.com/v1',
    ]);
  });

  it('leaves out capabilities that are not known', () => {
    const args = helmTemplateArgs({ releaseName: 'r', chartDir: '/c', namespace: 'n', valuesFiles: ['/v'] });
    expect(args.some((a) => a.startsWith('--kube-version') || a.startsWith('--api-versions'))).toBe(false);
  });
});

describe('helmEnv', () => {
  it('inherits nothing from the host and keeps helm off the network', () => {
    const env = helmEnv('/tmp/h');
    expect(Object.keys(env).sort()).toEqual([
      'HELM_CACHE_HOME',
      'HELM_CONFIG_HOME',
      'HELM_DATA_HOME',
      'HELM_NO_PLUGINS',
      'HOME',
      'HTTPS_PROXY',
      'HTTP_PROXY',
      'KUBECONFIG',
      'NO_PROXY',
      'TMPDIR',
    ]);
    expect(env['HELM_CACHE_HOME']).toBe('/tmp/h/cache');
    expect(env['HTTPS_PROXY']).toMatch(/^http:\/\/127\.0\.0\.1:/);
  });
});
