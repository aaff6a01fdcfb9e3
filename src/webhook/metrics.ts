/** hoist_webhook_deliveries_total{provider, result}: what the push receiver did with each request. */
import { Counter, type Registry } from 'prom-client';

export type DeliveryResult = 'accepted' | 'ignored' | 'replayed' | 'unauthorized' | 'rate-limited' | 'too-large' | 'bad-request';

const created = new WeakMap<Registry, Counter<'provider' | 'result'>>();

export function deliveriesCounter(registry: Registry): Counter<'provider' | 'result'> {
  let c = created.get(registry);
  if (!c) {
    c = new Counter({
      name: 'hoist_webhook_deliveries_total',
      help: 'webhook deliveries by provider (github, gitlab, generic) and result (accepted, ignored, replayed, unauthorized, rate-limited, too-large, bad-request)',
      labelNames: ['provider', 'result'],
      registers: [registry],
    });
    created.set(registry, c);
  }
  return c;
}
