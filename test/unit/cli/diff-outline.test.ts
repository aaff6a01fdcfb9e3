import { describe, expect, it } from 'vitest';
import { planSteps } from '../../../src/apply/phases.ts';
import { hookRunsFor } from '../../../src/apply/preview.ts';
import { outline } from '../../../src/cli/verbs/diff-outline.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const o = (apiVersion: string, kind: string, name: string, annotations?: Record<string, string>): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, namespace: 'ns', ...(annotations ? { annotations } : {}) },
});
const hook = (name: string, events: string, weight = '0', policy?: string) =>
  o('batch/v1', 'Job', name, {
    'core.rukpak.io/hook': events,
    'helm.sh/hook': events,
    'helm.sh/hook-weight': weight,
    ...(policy ? { 'helm.sh/hook-delete-policy': policy } : {}),
  });

/** the outline of a change to these objects and hooks, planned as the preview plans it */
const of = (objects: KubeObject[], hooks: KubeObject[], action: 'install' | 'upgrade' | undefined): string =>
  outline({ steps: planSteps(objects, (x) => x).steps, ...hookRunsFor(hooks, action), isNew: action !== undefined });

describe('hoist diff outline', () => {
  const objects = [
    o('apps/v1', 'Deployment', 'web'),
    o('v1', 'ConfigMap', 'cfg'),
    o('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', 'vwc'),
  ];
  const hooks = [
    hook('check', 'post-install,post-upgrade'),
    hook('migrate-b', 'pre-install,pre-upgrade', '5', 'hook-succeeded'),
    hook('migrate-a', 'pre-upgrade', '-5'),
    hook('cleanup', 'pre-delete'),
  ];

  it('lists the phases and, for an upgrade, the upgrade hooks in the order they run', () => {
    expect(of(objects, hooks, 'upgrade')).toBe(
      [
        'apply phases (a new revision applies each once the ones before it are ready):',
        '  1. configuration: 1 object',
        '  2. deploy: 1 object',
        '  3. publish: 1 object',
        'helm hooks that would run (pre-upgrade, then the phases, then post-upgrade):',
        '  pre-upgrade: batch/v1 Job ns/migrate-a (weight -5, delete policy before-hook-creation)',
        '  pre-upgrade: batch/v1 Job ns/migrate-b (weight 5, delete policy hook-succeeded)',
        '  post-upgrade: batch/v1 Job ns/check (weight 0, delete policy before-hook-creation)',
        '',
      ].join('\n'),
    );
  });

  it('for an install, only the install hooks; without hooks, no hook section', () => {
    expect(of(objects, hooks, 'install')).not.toContain('migrate-a');
    expect(of(objects, hooks, 'install')).toContain('pre-install: batch/v1 Job ns/migrate-b');
    expect(of(objects, [], 'install')).not.toContain('hooks');
  });

  it('says when the content has hooks but the change runs none: none of its event, or the installed revision again', () => {
    expect(of(objects, [hook('cleanup', 'pre-delete')], 'install')).toContain('helm hooks: none for install\n');
    expect(of(objects, hooks, undefined)).toContain('helm hooks: none (the installed revision again: hooks run only for a new one)\n');
  });
});
