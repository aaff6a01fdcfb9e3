/** The Operator CRD, with the schema the API server validates (kept beside crd.yaml, same content). */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/kube/types.ts';

export const OPERATOR_CRD_NAME = 'operators.examples.hoist.io';

export function operatorCRD(): KubeObject {
  return parse(readFileSync(new URL('./crd.yaml', import.meta.url), 'utf8')) as KubeObject;
}
