/**
 * A Processor is a pure function from a content tree plus config to Kubernetes objects. It may
 * read the tree and the explicit inputs in ProcessContext, and nothing else (no cluster access).
 */
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';

export interface ProcessContext {
  installNamespace?: string;
  /** API versions the cluster serves ("apps/v1", "v1", ...), for Helm .Capabilities and checks */
  apiVersions?: string[];
  kubeVersion?: string;
  /** the BundleDeployment's name, used e.g. as the default Helm release name */
  name: string;
}

export interface ProcessResult {
  objects: KubeObject[];
  warnings: string[];
}

export interface Processor {
  readonly format: BundleDeploymentSpec['format'];
  render(tree: string, config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult>;
}
