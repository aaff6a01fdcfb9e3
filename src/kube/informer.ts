/**
 * An informer: list, then watch from the list's resourceVersion, keeping a local cache and
 * telling handlers about adds, updates and deletes. Like client-go's reflector it
 * - resumes a dropped watch from the last resourceVersion it saw (bookmarks keep it fresh), so
 *   no event is lost across reconnects;
 * - relists when the server says that resourceVersion is gone (410, as a status or an ERROR
 *   event) and diffs the new list against the cache, so missed changes still reach handlers;
 * - retries failures (connection refused, API server restarting) with capped exponential backoff;
 * - asks the server to end each watch after timeoutSeconds and, on the client side, restarts a
 *   watch that has been silent for longer than the watchdog allows (a half-open connection).
 * The cache never holds managedFields.
 */
import type { StringPool } from '../util/string-pool.ts';
import type { Logger } from 'pino';
import { ApiError, isGone, type Status } from './api-error.ts';
import { sleep } from '../util/sleep.ts';
import { Backoff } from './backoff.ts';
import { objectKey, type KubeObject, type Reader, type TypeRef, type Watcher } from './types.ts';

export interface InformerHandler<T extends KubeObject> {
  /**
   * initialList: the object came from the informer's first list (it was there before the informer
   * synced). An object first seen in a later relist (created while the watch was down, e.g. after
   * 410 Gone) is news like a watch event's ADDED: initialList is false.
   */
  onAdd?(obj: T, initialList: boolean): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** obj is the last state the cache knew */
  onDelete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject> {
  client: Reader & Watcher;
  type: TypeRef;
  /** omit for all namespaces */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** list and watch PartialObjectMetadata: only metadata is sent and cached */
  metadataOnly?: boolean;
  /**
   * shrinks objects before caching (managedFields are always removed first; they are passed
   * aside, so a summary may keep e.g. the managers' names). The cached copy gets the server's
   * metadata.resourceVersion back when the transform drops it.
   */
  transform?: (obj: KubeObject, managedFields: unknown[] | undefined) => T;
  /** shares the cached copies' equal short strings through this pool (util/string-pool.ts); not for Secrets' data */
  strings?: StringPool;
  /** server-side watch timeout; default a random 300–600s like client-go, to spread reconnects */
  watchTimeoutSeconds?: number;
  /** restart a watch silent for this long; default watchTimeoutSeconds + 30s */
  watchdogMs?: number;
  /** backoff after failures: first delay and cap (default 800ms, 30s) */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  logger?: Logger;
}

export class Informer<T extends KubeObject = KubeObject> {
  private readonly store = new Map<string, T>();
  /** index name → its function and, per index value, the keys of the objects it holds */
  private readonly indexes = new Map<string, { of(obj: T): string[]; keys: Map<string, Set<string>> }>();
  private readonly handlers = new Set<InformerHandler<T>>();
  private readonly stopper = new AbortController();
  private readonly backoff: Backoff;
  private readonly timeoutSeconds: number;
  private readonly watchdogMs: number;
  private readonly describeType: string;
  private resourceVersion = '';
  private synced = false;
  private syncWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private loop: Promise<void> | undefined;
  /** how many times the informer listed (1 = only the initial list); for tests and metrics */
  relists = 0;
  /** how many watch connections it opened */
  watches = 0;

  constructor(private readonly opts: InformerOptions<T>) {
    this.timeoutSeconds = opts.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
    this.watchdogMs = opts.watchdogMs ?? this.timeoutSeconds * 1000 + 30_000;
    this.backoff = new Backoff(opts.backoffInitialMs ?? 800, opts.backoffMaxMs ?? 30_000);
    this.describeType = `${opts.type.apiVersion} ${opts.type.kind}${opts.namespace ? ` in ${opts.namespace}` : ''}`;
  }

  /** begins listing and watching in the background; idempotent */
  start(): void {
    this.loop ??= this.run();
  }

  /** stops the watch; the cache stays readable. Resolves once the background loop ended. */
  async stop(): Promise<void> {
    this.stopper.abort();
    for (const w of this.syncWaiters.splice(0)) w.reject(new Error(`informer for ${this.describeType} stopped before it synced`));
    await this.loop;
  }

  /** true once the first list has been stored */
  hasSynced(): boolean {
    return this.synced;
  }

  /** resolves once synced; rejects if stopped first or the signal fires */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.stopper.signal.aborted) return Promise.reject(new Error(`informer for ${this.describeType} is stopped`));
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject };
      this.syncWaiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
          reject(signal.reason ?? new Error('aborted'));
        },
        { once: true },
      );
    });
  }

  /**
   * Registers a handler; objects already cached are delivered to it as adds first, so a handler
   * added late sees the same world as one added before start. Returns the unregister function.
   */
  addHandler(handler: InformerHandler<T>): () => void {
    this.handlers.add(handler);
    for (const obj of this.store.values()) this.call(handler, 'onAdd', () => handler.onAdd?.(obj, true));
    return () => this.handlers.delete(handler);
  }

  /** the cached object by "namespace/name" or "name" key */
  get(key: string): T | undefined {
    return this.store.get(key);
  }

  getByName(name: string, namespace?: string): T | undefined {
    return this.store.get(objectKey(namespace ? { name, namespace } : { name }));
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** keeps the cached objects indexed by `of` (as client-go's Indexers), for byIndex; add before start() */
  addIndex(name: string, of: (obj: T) => string[]): void {
    const keys = new Map<string, Set<string>>();
    this.indexes.set(name, { of, keys });
    for (const [key, obj] of this.store) this.indexAdd(keys, of(obj), key);
  }

  /** the cached objects whose index `name` holds `value` */
  byIndex(name: string, value: string): T[] {
    const keys = this.indexes.get(name)?.keys.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.store.get(k)!);
  }

  private put(key: string, obj: T): void {
    const old = this.store.get(key);
    if (old) this.unindex(key, old);
    this.store.set(key, obj);
    for (const { of, keys } of this.indexes.values()) this.indexAdd(keys, of(obj), key);
  }

  private remove(key: string): void {
    const old = this.store.get(key);
    if (!old) return;
    this.unindex(key, old);
    this.store.delete(key);
  }

  private unindex(key: string, old: T): void {
    for (const { of, keys } of this.indexes.values()) {
      for (const v of of(old)) {
        const set = keys.get(v);
        set?.delete(key);
        if (set?.size === 0) keys.delete(v);
      }
    }
  }

  private indexAdd(keys: Map<string, Set<string>>, values: string[], key: string): void {
    for (const v of values) {
      let set = keys.get(v);
      if (!set) keys.set(v, (set = new Set()));
      set.add(key);
    }
  }

  keys(): string[] {
    return [...this.store.keys()];
  }

  /** the resourceVersion the next watch resumes from ("" = relist) */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
      } catch (e) {
        if (signal.aborted) break;
        if (isGone(e)) {
          // our resourceVersion was compacted away: start over from a fresh list, no delay
          this.opts.logger?.info({ type: this.describeType }, 'watch resourceVersion too old, relisting');
          this.resourceVersion = '';
          continue;
        }
        const delay = this.backoff.next();
        this.opts.logger?.warn({ type: this.describeType, err: e, retryInMs: Math.round(delay) }, 'list/watch failed');
        await sleep(delay, signal);
      }
    }
  }

  private async relist(): Promise<void> {
    const list = await this.opts.client.list(this.opts.type, this.listOptions());
    this.relists++;
    const seen = new Set<string>();
    const initialList = !this.synced;
    for (const raw of list.items) {
      const obj = this.shrink(raw);
      const key = objectKey(obj.metadata);
      seen.add(key);
      const old = this.store.get(key);
      this.put(key, obj);
      if (!old) this.emit('onAdd', (h) => h.onAdd?.(obj, initialList));
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit('onUpdate', (h) => h.onUpdate?.(old, obj));
    }
    // whatever was deleted while we were not watching
    for (const [key, old] of this.store) {
      if (seen.has(key)) continue;
      this.remove(key);
      this.emit('onDelete', (h) => h.onDelete?.(old));
    }
    this.resourceVersion = list.resourceVersion;
    this.backoff.reset();
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w.resolve();
    }
  }

  /** one watch connection, until the server ends it, it fails, or the watchdog fires */
  private async watchOnce(): Promise<void> {
    const conn = new AbortController();
    const onStop = (): void => conn.abort();
    this.stopper.signal.addEventListener('abort', onStop, { once: true });
    // stop() may have run while we were listing, before the listener above existed
    if (this.stopper.signal.aborted) conn.abort();
    let watchdogFired = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        watchdogFired = true;
        conn.abort();
      }, this.watchdogMs);
    };
    const opened = performance.now();
    let events = 0;
    try {
      arm();
      this.watches++;
      const stream = this.opts.client.watch(this.opts.type, {
        ...this.listOptions(),
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.timeoutSeconds,
        signal: conn.signal,
      });
      for await (const ev of stream) {
        arm();
        events++;
        if (ev.type === 'ERROR') {
          const status = ev.object as unknown as Status;
          throw new ApiError({ statusCode: status.code ?? 500, verb: 'watch', subject: this.describeType, status });
        }
        // the resume point is the server's object's version, whatever the transform keeps
        const rv = ev.object.metadata?.resourceVersion;
        if (ev.type !== 'BOOKMARK') this.apply(ev.type, this.shrink(ev.object));
        if (rv) this.resourceVersion = rv;
      }
    } catch (e) {
      if (!watchdogFired || this.stopper.signal.aborted) throw e;
    } finally {
      clearTimeout(timer);
      this.stopper.signal.removeEventListener('abort', onStop);
    }
    if (this.stopper.signal.aborted) return;
    if (watchdogFired) {
      this.opts.logger?.warn({ type: this.describeType, silentMs: this.watchdogMs }, 'watch silent too long, restarting');
      return;
    }
    // a server that ends watches immediately would otherwise be hammered in a tight loop
    if (events === 0 && performance.now() - opened < 1000) await sleep(this.backoff.next(), this.stopper.signal);
    else this.backoff.reset();
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void {
    const key = objectKey(obj.metadata);
    const old = this.store.get(key);
    if (type === 'DELETED') {
      this.remove(key);
      this.emit('onDelete', (h) => h.onDelete?.(old ?? obj));
      return;
    }
    this.put(key, obj);
    if (old) this.emit('onUpdate', (h) => h.onUpdate?.(old, obj));
    else this.emit('onAdd', (h) => h.onAdd?.(obj, false));
  }

  private shrink(raw: KubeObject): T {
    const { managedFields, ...metadata } = raw.metadata;
    const obj = { ...raw, metadata };
    const strings = this.opts.strings;
    if (!this.opts.transform) return (strings ? strings.internAll(obj) : obj) as T;
    const out = this.opts.transform(obj, managedFields);
    // every cached copy keeps the server's version, whatever the transform kept: a relist tells
    // changed objects from unchanged ones by it
    const kept =
      out.metadata.resourceVersion === metadata.resourceVersion ? out : { ...out, metadata: { ...out.metadata, resourceVersion: metadata.resourceVersion } };
    return strings ? strings.internAll(kept) : kept;
  }

  private listOptions(): { namespace?: string; labelSelector?: string; fieldSelector?: string; metadataOnly?: boolean } {
    const o: { namespace?: string; labelSelector?: string; fieldSelector?: string; metadataOnly?: boolean } = {};
    if (this.opts.metadataOnly) o.metadataOnly = true;
    if (this.opts.namespace) o.namespace = this.opts.namespace;
    if (this.opts.labelSelector) o.labelSelector = this.opts.labelSelector;
    if (this.opts.fieldSelector) o.fieldSelector = this.opts.fieldSelector;
    return o;
  }

  private emit(what: keyof InformerHandler<T>, fn: (h: InformerHandler<T>) => void): void {
    for (const h of this.handlers) this.call(h, what, () => fn(h));
  }

  private call(_h: InformerHandler<T>, what: string, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      // a failing handler must not stop the informer or the other handlers
      this.opts.logger?.error({ type: this.describeType, err: e, handler: what }, 'informer handler threw');
    }
  }
}
