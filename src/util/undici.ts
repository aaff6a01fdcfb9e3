/**
 * The parts of undici Hoist uses (Pool, EnvHttpProxyAgent, Dispatcher#request), loaded from
 * their own modules. undici's index loads every dispatcher, fetch, WebSocket, EventSource, the
 * mock agents and the SQLite cache store as well: ~13 MiB of resident memory the controller
 * never uses (issue 10, idle RSS). The classes are undici's own, typed by its declarations.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);

// undici's index adds request/stream/pipeline/connect/upgrade to Dispatcher.prototype; do the same
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export const EnvHttpProxyAgent = require('undici/lib/dispatcher/env-http-proxy-agent.js') as typeof Undici.EnvHttpProxyAgent;
export type Pool = Undici.Pool;
export type EnvHttpProxyAgent = Undici.EnvHttpProxyAgent;
/** for notifications (src/notify/sender.ts): a provider's own proxy */
export const ProxyAgent = require('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent;
export type ProxyAgent = Undici.ProxyAgent;
