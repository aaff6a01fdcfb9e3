/**
 * The reference the helm processor is compared with: the `helm template` CLI run directly, its
 * output parsed independently with the `yaml` package (not with Hoist's reader), objects keyed
 * by apiVersion/kind/namespace/name.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../../../src/kube/types.ts';

export interface ReferenceArgs {
  release: string;
  chartDir: string;
  namespace: string;
  valuesFile?: string;
  /** more --values files, after valuesFile, in order */
  valuesFiles?: string[];
  /** --set assignments (helm applies them after every values file) */
  set?: string[];
  kubeVersion?: string;
  apiVersions?: string[];
}

/** Runs `helm template` with the documented arguments and returns the parsed objects in output order. */
export function helmTemplateReference(helm: string, a: ReferenceArgs): KubeObject[] {
  const home = mkdtempSync(path.join(tmpdir(), 'hoist-helm-ref-'));
  try {
    for (const d of ['cache', 'config', 'data']) mkdirSync(path.join(home, d));
    const args = ['template', a.release, a.chartDir, '--namespace', a.namespace, '--include-crds', '--skip-tests'];
    if (a.valuesFile) args.push('--values', a.valuesFile);
    for (const f of a.valuesFiles ?? []) args.push('--values', f);
    for (const s of a.set ?? []) args.push('--set', s);
    if (a.kubeVersion) args.push('--kube-version', a.kubeVersion);
    for (const v of a.apiVersions ?? []) args.push('--api-versions', v);
    const r = spawnSync(helm, args, {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      env: {
        HOME: home,
        HELM_CACHE_HOME: path.join(home, 'cache'),
        HELM_CONFIG_HOME: path.join(home, 'config'),
        HELM_DATA_HOME: path.join(home, 'data'),
      },
    });
    if (r.status !== 0) throw new Error(`helm template failed: ${r.stderr}`);
    return parseAllDocuments(r.stdout)
      .map((d) => {
        if (d.errors.length > 0) throw d.errors[0];
        return d.toJS() as unknown;
      })
      .filter((v): v is KubeObject => v !== null && v !== undefined) as KubeObject[];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export function keyOf(o: KubeObject): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Objects by key; throws on a duplicate key so a set comparison cannot hide one. */
export function byKey(objects: readonly KubeObject[]): Map<string, KubeObject> {
  const m = new Map<string, KubeObject>();
  for (const o of objects) {
    const k = keyOf(o);
    if (m.has(k)) throw new Error(`duplicate object ${k}`);
    m.set(k, o);
  }
  return m;
}
