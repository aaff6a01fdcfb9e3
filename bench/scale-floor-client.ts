/**
 * The request floor as a process (bench/scale.ts's second reference): a client that makes, per
 * app, exactly the API requests of the scale benchmark's REQUEST_FLOOR and holds the same kinds of
 * watches as Hoist, with Hoist's own kube client, informer and libraries, and nothing else — no
 * conditions, no revisions to compare, no content store, no logging, no metrics. Its CPU per app
 * is what those requests, watch events, the download, unpack and YAML parse cost in Node; Hoist's
 * CPU per BD above it is Hoist's own logic.
 *
 * An app is a ConfigMap (a BundleDeployment would be reconciled by the running controller) whose
 * data names a tarball URL and its sha256. Per app, from the ConfigMap's watch event:
 * merge-patch its finalizer; download the tarball (sha256 checked, gunzipped and untarred in
 * memory, its YAML parsed); create a Secret with the objects as gzip-compressed JSON; server-side
 * apply the ServiceAccount, Service and Deployment; update the ConfigMap (status); then, once the
 * Deployment's watch shows it rolled out, apply the Ingress, update the ConfigMap again and create
 * an Event. 9 requests per app, as REQUEST_FLOOR counts them.
 *
 * Compiled with the controller (bench/controller-process.ts) and run as it runs, with its node
 * flags: `node dist/bench/scale-floor-client.js <kubeconfig> <namespace> <n> <workers> <user agent> [<warm>]`. Prints
 * "ready" once its watches have synced, "warm" once the first `warm` apps (a warm-up wave, of the
 * n) are done, and "done" once every app is done.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, gzipSync } from 'node:zlib';
import { loadAll } from 'js-yaml';
import { extract } from 'tar-stream';
import { request } from 'undici';
import { isConflict } from '../src/kube/api-error.ts';
import { createKubeClient, loadKubeConfig } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';

const [kubeconfig, namespace, nArg, workersArg, userAgent, warmArg] = process.argv.slice(2);
if (!kubeconfig || !namespace || !nArg || !workersArg || !userAgent)
  throw new Error('usage: scale-floor-client <kubeconfig> <namespace> <n> <workers> <user agent> [<warm>]');
const n = Number(nArg);
/** apps of the warm-up wave, among the n: "warm" is printed once that many are done */
const warm = Number(warmArg ?? 0);
const workers = Number(workersArg);
const LABEL = 'bench.hoist.dev/floor-app';
/** field manager, Event source and User-Agent: the benchmark finds its requests in the audit log by it */
const MANAGER = userAgent;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const KINDS = [
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
] as const;

// stopped with SIGTERM by the benchmark: exit normally, so --cpu-prof writes its profile
process.on('SIGTERM', () => process.exit(0));

const client = createKubeClient(loadKubeConfig(kubeconfig), { userAgent: MANAGER });

interface App {
  name: string;
  stage: 'new' | 'waiting' | 'ready' | 'done';
  objects?: KubeObject[];
}
const apps = new Map<string, App>();
const queue: App[] = [];
/** idle workers, each waiting for an app or for the end */
const idle: Array<() => void> = [];
let done = 0;

function enqueue(app: App): void {
  queue.push(app);
  idle.shift()?.();
}

async function download(url: string, sha256: string): Promise<KubeObject[]> {
  const res = await request(url);
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode}`);
  const hash = createHash('sha256');
  const texts: string[] = [];
  const untar = extract();
  untar.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      if (header.type === 'file') texts.push(Buffer.concat(chunks).toString('utf8'));
      next();
    });
  });
  const tapped = Readable.from(
    (async function* () {
      for await (const c of res.body as AsyncIterable<Buffer>) {
        hash.update(c);
        yield c;
      }
    })(),
  );
  await pipeline(tapped, createGunzip(), untar);
  if (hash.digest('hex') !== sha256) throw new Error(`${url}: sha256 mismatch`);
  return texts.flatMap((t) => loadAll(t) as KubeObject[]).filter((o) => o && typeof o === 'object');
}

const labelled = (o: KubeObject, app: string): KubeObject => ({
  ...o,
  metadata: { ...o.metadata, namespace, labels: { ...o.metadata.labels, [LABEL]: app } },
});

async function first(app: App): Promise<void> {
  await client.patch(CM, app.name, namespace, { metadata: { finalizers: ['bench.hoist.dev/floor'] } }, 'merge');
  const cm = cmCache.getByName(app.name, namespace);
  const data = (cm as { data?: Record<string, string> } | undefined)?.data ?? {};
  const objects = await download(data['url']!, data['sha256']!);
  app.objects = objects;
  await client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${app.name}-rev-1`, namespace, labels: { [LABEL]: app.name } },
    data: { objects: gzipSync(JSON.stringify(objects)).toString('base64') },
  });
  for (const o of objects.filter((x) => x.kind !== 'Ingress')) await client.apply(labelled(o, app.name), { fieldManager: MANAGER, force: true });
  app.stage = 'waiting';
  await status(app.name, 'False');
  // the Deployment may have rolled out before this reconcile got here
  if (deploymentReady(app)) {
    app.stage = 'ready';
    enqueue(app);
  }
}

async function second(app: App): Promise<void> {
  for (const o of app.objects!.filter((x) => x.kind === 'Ingress')) await client.apply(labelled(o, app.name), { fieldManager: MANAGER, force: true });
  await status(app.name, 'True');
  await client.create({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${app.name}.`, namespace },
    involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', name: app.name, namespace },
    reason: 'Installed',
    message: `${app.name} installed`,
    type: 'Normal',
    source: { component: MANAGER },
  } as unknown as KubeObject);
  app.stage = 'done';
  if (++done === warm) process.stdout.write('warm\n');
  if (done === n) {
    process.stdout.write('done\n');
    for (const w of idle.splice(0)) w();
  }
}

async function status(name: string, installed: string): Promise<void> {
  const cm = cmCache.getByName(name, namespace)!;
  await client.update({ ...cm, data: { ...(cm as { data?: Record<string, string> }).data, installed } } as KubeObject).catch(async (e: unknown) => {
    // a conflict with our own finalizer patch not yet in the cache: once more from the server's copy
    if (!isConflict(e)) throw e;
    const fresh = (await client.get(CM, name, namespace))!;
    await client.update({ ...fresh, data: { ...(fresh as { data?: Record<string, string> }).data, installed } } as KubeObject);
  });
}

type Deployment = KubeObject & {
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; updatedReplicas?: number; availableReplicas?: number };
};

/** the app's Deployment, by the name its bundle gives it, has rolled out */
function deploymentReady(app: App): boolean {
  const name = app.objects?.find((o) => o.kind === 'Deployment')?.metadata.name;
  const d = name ? (informers.get('Deployment')!.getByName(name, namespace) as Deployment | undefined) : undefined;
  if (!d) return false;
  const want = d.spec?.replicas ?? 1;
  return (
    (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 1) &&
    (d.status?.updatedReplicas ?? 0) >= want &&
    (d.status?.availableReplicas ?? 0) >= want
  );
}

const cmCache = new Informer({ client, type: CM, namespace });
const secrets = new Informer({ client, type: { apiVersion: 'v1', kind: 'Secret' }, namespace, labelSelector: LABEL, metadataOnly: true });
const informers = new Map(KINDS.map((k) => [k.kind as string, new Informer({ client, type: k, namespace, labelSelector: LABEL })]));
cmCache.addHandler({
  onAdd: (cm) => {
    // kube-root-ca.crt, which kube-controller-manager puts in every namespace, is no app
    if (apps.has(cm.metadata.name) || !(cm as { data?: Record<string, string> }).data?.['url']) return;
    const app: App = { name: cm.metadata.name, stage: 'new' };
    apps.set(app.name, app);
    enqueue(app);
  },
});
informers.get('Deployment')!.addHandler({
  onUpdate: (_, d) => {
    const app = apps.get(d.metadata.labels?.[LABEL] ?? '');
    if (app?.stage === 'waiting' && deploymentReady(app)) {
      app.stage = 'ready';
      enqueue(app);
    }
  },
});

for (const inf of [cmCache, secrets, ...informers.values()]) inf.start();
await Promise.all([cmCache, secrets, ...informers.values()].map((i) => i.waitForSync()));
process.stdout.write('ready\n');

await Promise.all(
  Array.from({ length: workers }, async () => {
    for (;;) {
      const app = queue.shift();
      if (!app) {
        if (done === n) return;
        await new Promise<void>((r) => idle.push(r));
        continue;
      }
      if (app.stage === 'new') await first(app);
      else if (app.stage === 'ready') await second(app);
    }
  }),
);
