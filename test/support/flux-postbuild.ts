/**
 * Flux's own post-build substitution code (scripts/flux-postbuild: github.com/fluxcd/pkg/kustomize
 * SubstituteVariables, github.com/fluxcd/pkg/envsubst, sigs.k8s.io/yaml JSONToYAML), asked over
 * stdin/stdout in one batch: the reference Hoist's port is compared with.
 */
import { spawnSync } from 'node:child_process';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';

export type FluxRequest =
  | { op: 'yaml'; object: unknown }
  | { op: 'envsubst'; text: string; vars: Record<string, string>; strict: boolean }
  | { op: 'substitute'; object: unknown; vars: Record<string, string>; strict: boolean; always: boolean };

export interface FluxAnswer {
  yaml?: string;
  out?: string;
  object?: KubeObject;
  skipped?: boolean;
  error?: string;
}

/** every request's answer, in order */
export function askFlux(requests: readonly FluxRequest[]): FluxAnswer[] {
  const r = spawnSync(toolPath('flux-postbuild'), [], {
    input: requests.map((q) => JSON.stringify(q)).join('\n') + '\n',
    encoding: 'utf8',
    maxBuffer: 1024 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`flux-postbuild failed (${r.status}): ${r.stderr}`);
  const lines = r.stdout.split('\n').filter(Boolean);
  if (lines.length !== requests.length) throw new Error(`flux-postbuild answered ${lines.length} of ${requests.length} requests`);
  return lines.map((l) => JSON.parse(l) as FluxAnswer);
}
