/**
 * Serving certificates for webhooks. OLM v0 minted certificates itself; OLM v1 delegates to a
 * certificate provider (render.CertificateProvider) and ships two: cert-manager (upstream) and
 * the OpenShift service-ca operator. Hoist uses the cert-manager provider, reproducing OLM v1's
 * rukpak/render/certproviders/certmanager.go:
 *
 * - per webhook Deployment, a self-signed Issuer "<cert>-selfsigned-issuer" and a Certificate
 *   "<cert>" (secret "<cert>", usage "server auth", DNS name "<service>.<ns>.svc") in the
 *   install namespace, where <service> is "<deployment>-service" and <cert> is
 *   "<service>-cert" (both cut to 63 characters as OLM cuts them);
 * - the annotation `cert-manager.io/inject-ca-from: <ns>/<cert>` on the webhook configurations
 *   and on CRDs with a conversion webhook, so cert-manager's cainjector fills in caBundle;
 * - the Deployment mounts the secret at the paths operators expect
 *   (/tmp/k8s-webhook-server/serving-certs as tls.crt/tls.key, and
 *   /apiserver.local.config/certificates as apiserver.crt/apiserver.key).
 *
 * This needs cert-manager in the cluster; the registry-v1 processor checks that the cluster
 * serves cert-manager.io/v1 when the served API versions are known.
 */
import type { KubeObject } from '../../kube/types.ts';
import { objectNameForBaseAndSuffix } from './names.ts';

export const CERT_MANAGER_API_VERSION = 'cert-manager.io/v1';
export const CERT_MANAGER_INJECT_CA_ANNOTATION = 'cert-manager.io/inject-ca-from';

export interface CertSecretInfo {
  secretName: string;
  certificateKey: string;
  privateKeyKey: string;
}

/** render.CertProvisionerFor: the names used for one webhook Deployment. */
export interface CertProvisioner {
  serviceName: string;
  certName: string;
  namespace: string;
}

export function certProvisionerFor(deploymentName: string, installNamespace: string): CertProvisioner {
  // OLM v0 naming, kept by OLM v1: dots are not allowed in Service names
  const serviceName = objectNameForBaseAndSuffix(deploymentName.replaceAll('.', '-'), 'service');
  return { serviceName, certName: objectNameForBaseAndSuffix(serviceName, 'cert'), namespace: installNamespace };
}

/** What a certificate provider contributes; the generators call it at the points OLM v1 does. */
export interface CertificateProvider {
  readonly name: string;
  /** annotations to merge into webhook configurations and conversion-webhook CRDs */
  injectionAnnotations(p: CertProvisioner): Record<string, string>;
  /** the Secret the Deployment mounts */
  secretInfo(p: CertProvisioner): CertSecretInfo;
  /** objects the provider needs, e.g. Issuer and Certificate */
  additionalObjects(p: CertProvisioner): KubeObject[];
}

export const certManagerProvider: CertificateProvider = {
  name: 'cert-manager',
  injectionAnnotations(p) {
    return { [CERT_MANAGER_INJECT_CA_ANNOTATION]: `${p.namespace}/${p.certName}` };
  },
  secretInfo(p) {
    return { secretName: p.certName, certificateKey: 'tls.crt', privateKeyKey: 'tls.key' };
  },
  additionalObjects(p) {
    const issuerName = objectNameForBaseAndSuffix(p.certName, 'selfsigned-issuer');
    return [
      {
        apiVersion: CERT_MANAGER_API_VERSION,
        kind: 'Issuer',
        metadata: { name: issuerName, namespace: p.namespace },
        spec: { selfSigned: {} },
      },
      {
        apiVersion: CERT_MANAGER_API_VERSION,
        kind: 'Certificate',
        metadata: { name: p.certName, namespace: p.namespace },
        spec: {
          secretName: p.certName,
          usages: ['server auth'],
          dnsNames: [`${p.serviceName}.${p.namespace}.svc`],
          issuerRef: { name: issuerName },
        },
      },
    ];
  },
};
