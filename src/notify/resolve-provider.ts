/**
 * A NotificationProvider made usable: its Secret's `address` and `token` and its CA read through
 * the client given (the controller passes one acting as the provider's ServiceAccount, or its
 * default one, or itself; `hoist notify test` passes the user's), every reference in the
 * provider's own namespace. Failures are terminal HoistErrors naming the reference, never a value.
 */
import { parseDuration } from '../../api/v1alpha2/defaults.ts';
import { SECRET_KEY_ADDRESS, SECRET_KEY_TOKEN, type NotificationProvider } from '../../api/v1alpha2/notification-types.ts';
import { ANNOTATION_CREDENTIAL_HOSTS } from '../../api/v1alpha2/types.ts';
import { isForbidden } from '../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { caBundleProblem } from '../sources/transport/ca-bundle.ts';
import { NotifyCode, notifyError } from './errors.ts';
import type { ProviderSettings } from './providers.ts';
import type { SendOptions } from './sender.ts';

export interface ResolvedProvider {
  settings: ProviderSettings;
  send: SendOptions;
}

const DEFAULT_TIMEOUT_MS = 15_000;

type SecretObject = KubeObject & { data?: Record<string, string> };

export function providerSubject(p: NotificationProvider): string {
  return `NotificationProvider ${p.metadata.namespace}/${p.metadata.name}`;
}

async function readSecret(client: KubeClient, p: NotificationProvider, name: string, field: string): Promise<SecretObject> {
  const subject = providerSubject(p);
  let s: SecretObject | undefined;
  try {
    s = await client.get<SecretObject>({ apiVersion: 'v1', kind: 'Secret' }, name, p.metadata.namespace);
  } catch (e) {
    if (isForbidden(e))
      throw notifyError(
        `${field}: secret ${p.metadata.namespace}/${name} may not be read by the identity reading it (spec.serviceAccountName, the controller's default ServiceAccount, or the controller)`,
        NotifyCode.SecretForbidden,
        subject,
        true,
      );
    throw e;
  }
  if (!s) throw notifyError(`${field}: secret ${p.metadata.namespace}/${name} not found`, NotifyCode.SecretNotFound, subject, true);
  return s;
}

const text = (s: SecretObject, key: string): string | undefined => {
  const v = s.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8').trim();
};

/** reads what `p` refers to; throws a terminal HoistError for a missing, unreadable or unusable reference */
export async function resolveProvider(client: KubeClient, p: NotificationProvider): Promise<ResolvedProvider> {
  const spec = p.spec;
  const subject = providerSubject(p);
  let address = spec.address;
  let token: string | undefined;
  let credentialHosts: string[] | undefined;
  if (spec.secretRef) {
    const s = await readSecret(client, p, spec.secretRef.name, 'spec.secretRef');
    address = text(s, SECRET_KEY_ADDRESS) ?? address;
    token = text(s, SECRET_KEY_TOKEN);
    if (address === undefined && token === undefined)
      throw notifyError(
        `spec.secretRef: secret ${p.metadata.namespace}/${spec.secretRef.name} has neither key ${SECRET_KEY_ADDRESS} nor ${SECRET_KEY_TOKEN}`,
        NotifyCode.SecretKeyMissing,
        subject,
        true,
      );
    credentialHosts = (s.metadata.annotations?.[ANNOTATION_CREDENTIAL_HOSTS] ?? '').split(',').filter((h) => h.trim() !== '');
  }
  let ca: string | undefined;
  if (spec.certSecretRef) {
    const key = spec.certSecretRef.key ?? 'ca.crt';
    const s = await readSecret(client, p, spec.certSecretRef.name, 'spec.certSecretRef');
    ca = text(s, key);
    if (ca === undefined)
      throw notifyError(
        `spec.certSecretRef: secret ${p.metadata.namespace}/${spec.certSecretRef.name} has no key ${key}`,
        NotifyCode.SecretKeyMissing,
        subject,
        true,
      );
    const problem = caBundleProblem(ca);
    if (problem)
      throw notifyError(
        `spec.certSecretRef: secret ${p.metadata.namespace}/${spec.certSecretRef.name} key ${key} ${problem}`,
        NotifyCode.CaInvalid,
        subject,
        true,
      );
  }
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  try {
    if (spec.timeout) timeoutMs = parseDuration(spec.timeout, 'spec.timeout') || DEFAULT_TIMEOUT_MS;
  } catch {
    timeoutMs = DEFAULT_TIMEOUT_MS;
  }
  return {
    settings: { type: spec.type, address, token, context: spec.context },
    send: { subject, ca, proxy: spec.proxy, timeoutMs, credentialHosts, secret: spec.secretRef ? `${p.metadata.namespace}/${spec.secretRef.name}` : undefined },
  };
}
