/**
 * The one HTTP client of notifications. Rules (docs/security.md, "Notifications"):
 *
 * - TLS is always verified; a provider's CA (certSecretRef) is added to the system roots, never
 *   substituted. A provider's proxy is used for its requests only; otherwise HTTPS_PROXY/NO_PROXY
 *   apply as for sources.
 * - A request that carries anything read from a Secret (a token, or an address that is itself a
 *   credential, like a Slack webhook URL) goes only over https and only to a host the Secret
 *   names in `core.rukpak.io/credential-hosts` — the rule of source credentials.
 * - No redirects are followed; each request has a deadline.
 * - Errors name the provider and the host, never the path or query (webhook URLs carry secrets)
 *   and never a response body.
 */
import { rootCertificates } from 'node:tls';
import type { Dispatcher } from 'undici';
import { hostPort, parseHostEntry } from '../sources/credential-hosts.ts';
import { EnvHttpProxyAgent, ProxyAgent } from '../util/undici.ts';
import { NotifyCode, notifyError } from './errors.ts';
import type { OutboundRequest } from './providers.ts';

export interface SendOptions {
  /** the provider, as errors name it: "NotificationProvider ns/name" */
  subject: string;
  ca?: string | undefined;
  proxy?: string | undefined;
  timeoutMs: number;
  /** the Secret's credential-hosts entries when the request carries what the Secret holds; undefined when it carries nothing secret */
  credentialHosts?: readonly string[] | undefined;
  /** the Secret's name, for messages */
  secret?: string | undefined;
}

/** distinct (CA, proxy) agents kept open */
const MAX_AGENTS = 32;

export class Sender {
  private readonly agents = new Map<string, Dispatcher>();

  constructor(private readonly userAgent = 'hoist') {}

  /** checks the credential rule for `url`; throws a terminal HoistError when the request may not go there */
  static checkHost(url: URL, o: Pick<SendOptions, 'credentialHosts' | 'subject' | 'secret'>): void {
    if (o.credentialHosts === undefined) return;
    const where = `${o.subject} (${hostPort(url)})`;
    const secret = o.secret ? `secret ${o.secret}` : 'its secret';
    if (url.protocol !== 'https:')
      throw notifyError(`${secret} is sent only over https, not to an http:// address`, NotifyCode.InsecureCredentials, where, true);
    const hosts = o.credentialHosts.map(parseHostEntry).filter((h): h is string => h !== undefined);
    if (!hosts.includes(hostPort(url)))
      throw notifyError(
        `${secret} is not bound to host ${hostPort(url)}: annotate it with core.rukpak.io/credential-hosts (host or host:port, comma-separated)`,
        NotifyCode.CredentialHosts,
        where,
        true,
      );
  }

  /** one request; resolves on 2xx, throws a HoistError otherwise (transient: network, timeout, 408, 429, 5xx) */
  async send(req: OutboundRequest, o: SendOptions): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw notifyError('the address is not a URL', NotifyCode.BadAddress, o.subject, true);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw notifyError(`unsupported scheme ${url.protocol}`, NotifyCode.BadAddress, o.subject, true);
    Sender.checkHost(url, o);
    const where = `${o.subject} (${hostPort(url)})`;
    let status: number;
    try {
      const res = await this.agent(o.ca, o.proxy).request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: { ...req.headers, 'user-agent': this.userAgent, 'content-length': String(Buffer.byteLength(req.body)) },
        body: req.body,
        signal: AbortSignal.timeout(o.timeoutMs),
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
      });
      status = res.statusCode;
      await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
    } catch (e) {
      const { code, name } = e as { code?: unknown; name?: unknown };
      const timedOut = name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
      if (timedOut) throw notifyError(`no answer within ${o.timeoutMs} ms`, NotifyCode.Timeout, where, false);
      throw notifyError(`request failed (${typeof code === 'string' ? code : String(name ?? 'error')})`, NotifyCode.Unreachable, where, false);
    }
    if (status >= 200 && status < 300) return;
    const transient = status === 408 || status === 429 || status >= 500;
    throw notifyError(`the provider answered HTTP ${status}`, NotifyCode.HttpStatus, where, !transient);
  }

  private agent(ca: string | undefined, proxy: string | undefined): Dispatcher {
    const key = `${proxy ?? ''}\n${ca ?? ''}`;
    let d = this.agents.get(key);
    if (d) return d;
    const tls = { rejectUnauthorized: true, ...(ca ? { ca: [...rootCertificates, ca] } : {}) };
    d = proxy ? new ProxyAgent({ uri: proxy, requestTls: tls, proxyTls: tls }) : new EnvHttpProxyAgent({ connect: tls, requestTls: tls });
    this.agents.set(key, d);
    for (const [k, old] of this.agents) {
      if (this.agents.size <= MAX_AGENTS) break;
      this.agents.delete(k);
      void old.close();
    }
    return d;
  }

  async close(): Promise<void> {
    const all = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(all.map((d) => d.close().catch(() => {})));
  }
}
