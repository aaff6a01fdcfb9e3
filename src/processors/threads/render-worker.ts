/**
 * A render thread's entry (render-pool.ts starts it): renders the formats whose processors run
 * in JavaScript (plain, registry+v1) with the same processors the controller's thread uses, one
 * request after another as they arrive (several may be in flight: a render awaits its file
 * reads). Helm and kustomize are not here: they already run in processes of their own.
 */
import { parentPort } from 'node:worker_threads';
import { plainProcessor } from '../plain.ts';
import type { Processor } from '../processor.ts';
import { registryV1Processor } from '../registry-v1/render.ts';
import { toWire, type RenderReply, type RenderRequest } from './wire.ts';

const processors = new Map<string, Processor>([
  [plainProcessor.format, plainProcessor],
  [registryV1Processor.format, registryV1Processor],
]);

const port = parentPort;
if (!port) throw new Error('render-worker.ts runs as a worker thread (render-pool.ts)');

port.on('message', (m: RenderRequest) => {
  const processor = processors.get(m.format);
  const reply = (r: RenderReply) => port.postMessage(r);
  if (!processor) {
    reply({ id: m.id, error: { message: `format ${m.format} is not rendered in a thread`, name: 'Error' } });
    return;
  }
  processor.render(m.tree, m.config, m.ctx).then(
    (result) => reply({ id: m.id, result }),
    (e: unknown) => reply({ id: m.id, error: toWire(e) }),
  );
});
