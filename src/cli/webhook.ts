/**
 * Wires the push receiver (src/webhook) into a running controller: its secrets from the Secret
 * named by --webhook-secret, and verified pushes into the manager's PushNotices.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { KubeClient } from '../kube/types.ts';
import type { PushNotices } from '../reconciler/routing/push-notices.ts';
import { startWebhookReceiver, type WebhookReceiver, type WebhookReceiverOptions } from '../webhook/receiver.ts';
import { WebhookSecrets } from '../webhook/webhook-secrets.ts';

export interface WebhookOptions extends Partial<Pick<WebhookReceiverOptions, 'perSource' | 'overall' | 'clock' | 'timestampWindowMs'>> {
  client: KubeClient;
  pushes: Pick<PushNotices, 'notify'>;
  /** `namespace/name` of the Secret with keys github, gitlab, generic */
  secret: string;
  host: string;
  port: number;
  registry?: Registry;
  log: Logger;
}

export async function startWebhook(opts: WebhookOptions): Promise<WebhookReceiver> {
  const ref = WebhookSecrets.parseRef(opts.secret);
  const log = opts.log.child({ component: 'webhook' });
  const secrets = new WebhookSecrets(opts.client, ref.namespace, ref.name, log);
  await secrets.start();
  const receiver = await startWebhookReceiver({
    port: opts.port,
    host: opts.host,
    secrets,
    onPush: (event) => opts.pushes.notify(event.repositories, event.branch),
    log,
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.perSource ? { perSource: opts.perSource } : {}),
    ...(opts.overall ? { overall: opts.overall } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.timestampWindowMs !== undefined ? { timestampWindowMs: opts.timestampWindowMs } : {}),
  });
  return {
    port: receiver.port,
    close: async () => {
      await receiver.close();
      await secrets.stop();
    },
  };
}
