/**
 * Scopes without an API server: the built-in kinds of Kubernetes 1.34, namespaced or not, for a
 * preview made with no kubeconfig (`hoist render` offline). Kinds it does not know (custom
 * resources whose CRD is not in the bundle) are reported as not served, so their namespace is left
 * as the bundle wrote it. It claims nothing about what a cluster serves: helm and registry-v1 get
 * no .Capabilities from it. With a kubeconfig the CLI uses the cluster's discovery instead.
 */
import type { Discovery, ResourceInfo, TypeRef } from './types.ts';

/** "group/version" → kind → [plural, namespaced] */
const BUILTIN: Record<string, Record<string, [string, boolean]>> = {
  v1: {
    ConfigMap: ['configmaps', true],
    Endpoints: ['endpoints', true],
    Event: ['events', true],
    LimitRange: ['limitranges', true],
    Namespace: ['namespaces', false],
    Node: ['nodes', false],
    PersistentVolume: ['persistentvolumes', false],
    PersistentVolumeClaim: ['persistentvolumeclaims', true],
    Pod: ['pods', true],
    PodTemplate: ['podtemplates', true],
    ReplicationController: ['replicationcontrollers', true],
    ResourceQuota: ['resourcequotas', true],
    Secret: ['secrets', true],
    Service: ['services', true],
    ServiceAccount: ['serviceaccounts', true],
  },
  'apps/v1': {
    ControllerRevision: ['controllerrevisions', true],
    DaemonSet: ['daemonsets', true],
    Deployment: ['deployments', true],
    ReplicaSet: ['replicasets', true],
    StatefulSet: ['statefulsets', true],
  },
  'batch/v1': { CronJob: ['cronjobs', true], Job: ['jobs', true] },
  'autoscaling/v2': { HorizontalPodAutoscaler: ['horizontalpodautoscalers', true] },
  'autoscaling/v1': { HorizontalPodAutoscaler: ['horizontalpodautoscalers', true] },
  'policy/v1': { PodDisruptionBudget: ['poddisruptionbudgets', true] },
  'networking.k8s.io/v1': { Ingress: ['ingresses', true], IngressClass: ['ingressclasses', false], NetworkPolicy: ['networkpolicies', true] },
  'discovery.k8s.io/v1': { EndpointSlice: ['endpointslices', true] },
  'coordination.k8s.io/v1': { Lease: ['leases', true] },
  'scheduling.k8s.io/v1': { PriorityClass: ['priorityclasses', false] },
  'node.k8s.io/v1': { RuntimeClass: ['runtimeclasses', false] },
  'storage.k8s.io/v1': {
    CSIDriver: ['csidrivers', false],
    CSINode: ['csinodes', false],
    CSIStorageCapacity: ['csistoragecapacities', true],
    StorageClass: ['storageclasses', false],
    VolumeAttachment: ['volumeattachments', false],
  },
  'rbac.authorization.k8s.io/v1': {
    ClusterRole: ['clusterroles', false],
    ClusterRoleBinding: ['clusterrolebindings', false],
    Role: ['roles', true],
    RoleBinding: ['rolebindings', true],
  },
  'admissionregistration.k8s.io/v1': {
    MutatingWebhookConfiguration: ['mutatingwebhookconfigurations', false],
    ValidatingAdmissionPolicy: ['validatingadmissionpolicies', false],
    ValidatingAdmissionPolicyBinding: ['validatingadmissionpolicybindings', false],
    ValidatingWebhookConfiguration: ['validatingwebhookconfigurations', false],
  },
  'apiextensions.k8s.io/v1': { CustomResourceDefinition: ['customresourcedefinitions', false] },
  'apiregistration.k8s.io/v1': { APIService: ['apiservices', false] },
  'certificates.k8s.io/v1': { CertificateSigningRequest: ['certificatesigningrequests', false] },
  'flowcontrol.apiserver.k8s.io/v1': { FlowSchema: ['flowschemas', false], PriorityLevelConfiguration: ['prioritylevelconfigurations', false] },
};

export function builtinScopes(): Pick<Discovery, 'resourceFor'> {
  return {
    resourceFor: async (t: TypeRef): Promise<ResourceInfo | undefined> => {
      const found = BUILTIN[t.apiVersion]?.[t.kind];
      if (!found) return undefined;
      const [group, version] = t.apiVersion.includes('/') ? (t.apiVersion.split('/') as [string, string]) : ['', t.apiVersion];
      return { group, version, resource: found[0], kind: t.kind, namespaced: found[1] };
    },
  };
}

/** the "group/version"s of the built-in kinds above, sorted (what an offline preview assumes is served) */
export function builtinApiVersions(): string[] {
  return Object.keys(BUILTIN).sort();
}
