/**
 * The receiver's shared secrets, from one Kubernetes Secret (`--webhook-secret namespace/name`,
 * keys `github`, `gitlab`, `generic`), watched so a rotation takes effect within seconds without a
 * restart. Only that Secret is listed and watched (a field selector on its name). A missing
 * Secret or key disables that endpoint: its deliveries are refused like bad signatures. Values
 * never leave this module except to the signature checks.
 */
import type { Logger } from 'pino';
import { Informer } from '../kube/informer.ts';
import type { KubeObject, Reader, Watcher } from '../kube/types.ts';
import type { Provider } from './push-event.ts';

export interface SecretSource {
  /** the provider's secret, or undefined when none is configured */
  secretFor(provider: Provider): Buffer | undefined;
}

type SecretObject = KubeObject & { data?: Record<string, string> };

export class WebhookSecrets implements SecretSource {
  private readonly informer: Informer<SecretObject>;
  private values = new Map<Provider, Buffer>();

  constructor(
    client: Reader & Watcher,
    private readonly namespace: string,
    private readonly name: string,
    private readonly log: Logger,
  ) {
    this.informer = new Informer<SecretObject>({
      client,
      type: { apiVersion: 'v1', kind: 'Secret' },
      namespace,
      fieldSelector: `metadata.name=${name}`,
      // keep only the three keys: nothing else of the Secret is cached
      transform: (o) => ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion },
        data: pick((o as SecretObject).data),
      }),
      logger: log,
    });
    const load = (o: SecretObject | undefined): void => this.load(o);
    this.informer.addHandler({ onAdd: load, onUpdate: (_, b) => load(b), onDelete: () => load(undefined) });
  }

  /** parses `namespace/name`; throws naming the flag on anything else */
  static parseRef(ref: string): { namespace: string; name: string } {
    const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(ref);
    if (!m) throw new Error(`bad --webhook-secret ${JSON.stringify(ref)}: want namespace/name`);
    return { namespace: m[1]!, name: m[3]! };
  }

  async start(signal?: AbortSignal): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync(signal);
    if (this.values.size === 0)
      this.log.warn(
        { secret: `${this.namespace}/${this.name}` },
        'webhook secret missing or without github/gitlab/generic keys: every delivery is refused until it exists',
      );
  }

  secretFor(provider: Provider): Buffer | undefined {
    return this.values.get(provider);
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  private load(o: SecretObject | undefined): void {
    const next = new Map<Provider, Buffer>();
    for (const p of ['github', 'gitlab', 'generic'] as const) {
      const v = o?.data?.[p];
      // a trailing newline from `kubectl create secret --from-file` is not part of the secret
      const b = v
        ? Buffer.from(
            Buffer.from(v, 'base64')
              .toString('utf8')
              .replace(/\r?\n$/, ''),
            'utf8',
          )
        : undefined;
      if (b?.length) next.set(p, b);
    }
    this.values = next;
    // names of the configured keys only, never values
    this.log.info({ secret: `${this.namespace}/${this.name}`, providers: [...next.keys()] }, 'webhook secrets loaded');
  }
}

function pick(data: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['github', 'gitlab', 'generic']) if (data?.[k] !== undefined) out[k] = data[k];
  return out;
}
