/**
 * A Processor is a pure function from a content tree plus config to Kubernetes objects. It may
 * read the tree and the explicit inputs in ProcessContext, and nothing else (no cluster access).
 */
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import type { DecryptionKeys } from './sops/age-keys.ts';

export interface ProcessContext {
  installNamespace?: string;
  /** API versions the cluster serves ("apps/v1", "v1", ...), for Helm .Capabilities and checks */
  apiVersions?: string[];
  kubeVersion?: string;
  /** the BundleDeployment's name, used e.g. as the default Helm release name */
  name: string;
  /**
   * config.helm.valuesFrom as read from the cluster, in order (the reader skipped optional ones
   * that are missing): the processor parses and merges them. The text may be secret: it never
   * goes into a message, a warning or a log.
   */
  helmValuesFrom?: readonly ValuesFromText[];
  /**
   * spec.decryption's age identities as read from the cluster: SOPS-encrypted manifests (plain,
   * kustomize) and values files (helm) are decrypted with them, in memory (sops/). Absent, an
   * encrypted file is an error. The identities never go into a message, a warning or a log.
   */
  decryption?: DecryptionKeys;
}

/** the text of one config.helm.valuesFrom entry */
export interface ValuesFromText {
  /** names the reference in messages, never its content: "secret ns/name key values.yaml" */
  ref: string;
  text: string;
  /** set: the whole text is one value at this dot path; unset: a values.yaml merged at the root */
  targetPath?: string;
  /** read from a Secret: its strings are also blanked out of helm's messages */
  secret: boolean;
}

export interface ProcessResult {
  objects: KubeObject[];
  warnings: string[];
  /**
   * The texts of the values decrypted from SOPS-encrypted files: whoever prints objects or
   * messages about them (hoist render/diff, conditions) blanks these out. Only in memory.
   */
  sensitive?: string[];
}

export interface Processor {
  readonly format: BundleDeploymentSpec['format'];
  render(tree: string, config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult>;
}
