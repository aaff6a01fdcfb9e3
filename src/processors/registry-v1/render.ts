/**
 * The registry-v1 processor: an OLM registry+v1 bundle turned into the plain objects OLM v1
 * would install (see src/processors/README.md for the rules and how they were checked).
 *
 * Order of the output is OLM v1's generator order: ServiceAccounts, Roles and RoleBindings,
 * ClusterRoles and ClusterRoleBindings, CRDs, the bundle's other manifests, Deployments,
 * ValidatingWebhookConfigurations, MutatingWebhookConfigurations, webhook Services, certificate
 * objects. Pure: reads the tree, nothing else.
 */
import type { BundleDeploymentSpec, RegistryV1DeploymentConfig } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { HoistError } from '../../util/errors.ts';
import { combineProcessErrors, processError } from '../errors.ts';
import { describeObject } from '../../util/describe-object.ts';
import { duplicateErrors } from '../manifest.ts';
import type { ProcessContext, ProcessResult, Processor } from '../processor.ts';
import { loadRegistryV1Bundle } from './bundle.ts';
import type { RegistryV1Bundle } from './bundle.ts';
import { certManagerProvider } from './certificates.ts';
import type { CertificateProvider } from './certificates.ts';
import {
  additionalResources,
  certificateResources,
  clusterPermissions,
  crdsWithConversion,
  deployments,
  mutatingWebhooks,
  permissions,
  serviceAccounts,
  validatingWebhooks,
  webhookServices,
} from './generators.ts';
import type { RenderOptions } from './generators.ts';
import { isDns1123Label, resolveInstallMode } from './install-mode.ts';
import type { InstallMode } from './install-mode.ts';
import { validateBundle } from './validate.ts';
import { ProcessCode } from '../errors.ts';

export interface RegistryV1RenderOptions {
  installNamespace: string;
  /** "" or undefined: AllNamespaces; shorthand for watchNamespaces: [watchNamespace] */
  watchNamespace?: string;
  /** the target namespaces; two or more: MultiNamespace. Exclusive with watchNamespace */
  watchNamespaces?: readonly string[];
  /** OLM v1's deploymentConfig: env, volumes, resources, placement and annotations of every Deployment */
  deploymentConfig?: RegistryV1DeploymentConfig;
  /** API versions the cluster serves; when given, every object's apiVersion must be among them */
  apiVersions?: readonly string[];
  /** default: cert-manager; null renders webhooks without certificate management, as OLM v1 does without a provider */
  certificateProvider?: CertificateProvider | null;
}

export interface RegistryV1RenderResult extends ProcessResult {
  mode: InstallMode;
  targetNamespaces: string[];
}

/**
 * Renders a loaded bundle. Throws a terminal HoistError listing every problem: bundle validation
 * (OLM v1's validators), an unsupported install mode, APIs the cluster does not serve.
 */
export function renderRegistryV1Bundle(bundle: RegistryV1Bundle, options: RegistryV1RenderOptions): RegistryV1RenderResult {
  const { installNamespace } = options;
  if (!installNamespace) {
    throw processError('registry-v1 bundles need spec.installNamespace', ProcessCode.InvalidConfig);
  }
  if (!isDns1123Label(installNamespace)) {
    throw processError(`installNamespace "${installNamespace}" is not a valid namespace name`, ProcessCode.InvalidConfig);
  }
  const problems = validateBundle(bundle);
  if (problems.length > 0) {
    throw combineProcessErrors(problems.map((p) => processError(p, ProcessCode.InvalidBundle, bundle.csvFile))) as HoistError;
  }
  const { mode, targetNamespaces } = resolveInstallMode(bundle.csv, bundle.csvFile, installNamespace, options);
  const provider = options.certificateProvider === null ? undefined : (options.certificateProvider ?? certManagerProvider);
  const opts: RenderOptions = {
    installNamespace,
    targetNamespaces,
    ...(provider ? { certificateProvider: provider } : {}),
    ...(options.deploymentConfig ? { deploymentConfig: options.deploymentConfig } : {}),
  };

  const crds = crdsWithConversion(bundle, opts);
  if (crds.problems.length > 0) {
    throw combineProcessErrors(crds.problems.map((p) => processError(p, ProcessCode.InvalidBundle, bundle.csvFile))) as HoistError;
  }
  const objects: KubeObject[] = [
    ...serviceAccounts(bundle, opts),
    ...permissions(bundle, opts),
    ...clusterPermissions(bundle, opts),
    ...crds.objects,
    ...additionalResources(bundle, opts),
    ...deployments(bundle, opts),
    ...validatingWebhooks(bundle, opts),
    ...mutatingWebhooks(bundle, opts),
    ...webhookServices(bundle, opts),
    ...certificateResources(bundle, opts),
  ];

  const errors: HoistError[] = [];
  // generated names can collide with the bundle's own manifests (e.g. a bundled ServiceAccount)
  errors.push(...duplicateErrors(objects.map((object) => ({ object, file: sourceOf(bundle, object) }))));
  if (options.apiVersions !== undefined) errors.push(...unservedApis(bundle, objects, options.apiVersions));
  const failure = combineProcessErrors(errors);
  if (failure) throw failure;

  const warnings: string[] = [];
  if (provider && bundle.csv.webhookDefinitions.length > 0) {
    warnings.push(`webhook certificates are managed by ${provider.name}: it must be installed in the cluster`);
  }
  return { objects, warnings, mode, targetNamespaces };
}

function sourceOf(bundle: RegistryV1Bundle, obj: KubeObject): string {
  const found = [...bundle.crds, ...bundle.others].find((s) => s.object.kind === obj.kind && s.object.metadata.name === obj.metadata.name);
  return found ? found.file : `${bundle.csvFile} (generated)`;
}

function unservedApis(bundle: RegistryV1Bundle, objects: KubeObject[], served: readonly string[]): HoistError[] {
  const set = new Set(served);
  return objects
    .filter((o) => !set.has(o.apiVersion))
    .map((o) =>
      processError(
        `${describeObject(o)}: the cluster does not serve ${o.apiVersion}` +
          (o.apiVersion.startsWith('cert-manager.io/') ? ' (webhook certificates need cert-manager installed)' : ''),
        ProcessCode.UnsupportedApi,
        sourceOf(bundle, o),
      ),
    );
}

/** Loads the bundle from `tree` and renders it. */
export async function renderRegistryV1(tree: string, options: RegistryV1RenderOptions): Promise<RegistryV1RenderResult> {
  const bundle = await loadRegistryV1Bundle(tree);
  return renderRegistryV1Bundle(bundle, options);
}

export const registryV1Processor: Processor = {
  format: 'registry-v1',
  async render(tree: string, config: BundleDeploymentSpec['config'], ctx: ProcessContext): Promise<ProcessResult> {
    const { watchNamespace, watchNamespaces, deploymentConfig } = config?.registryV1 ?? {};
    const result = await renderRegistryV1(tree, {
      installNamespace: ctx.installNamespace ?? '',
      ...(watchNamespace === undefined ? {} : { watchNamespace }),
      ...(watchNamespaces === undefined ? {} : { watchNamespaces }),
      ...(deploymentConfig === undefined ? {} : { deploymentConfig }),
      ...(ctx.apiVersions === undefined ? {} : { apiVersions: ctx.apiVersions }),
    });
    return { objects: result.objects, warnings: result.warnings };
  },
};
