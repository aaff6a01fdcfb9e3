import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/kube/client.ts';

/** a watch stream written in chunks cut at the given offsets (mid-line, mid-character, at newlines) */
let chunks: string[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const json = (v: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (req.url === '/api') return json({ kind: 'APIVersions', versions: ['v1'] });
    if (req.url === '/apis') return json({ kind: 'APIGroupList', groups: [] });
    if (req.url === '/api/v1') return json({ resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['watch'] }] });
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const bytes = Buffer.from(chunks.join(''));
    // cut the bytes where the strings were cut, so a multi-byte character may straddle two writes
    let at = 0;
    const writes: Buffer[] = [];
    for (const c of chunks) {
      const n = Buffer.byteLength(c);
      writes.push(bytes.subarray(at, at + n));
      at += n;
    }
    const next = () => {
      const w = writes.shift();
      if (!w) return res.end();
      res.write(w);
      setImmediate(next);
    };
    next();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const event = (i: number) =>
  JSON.stringify({ type: 'ADDED', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'ns' }, data: { k: `välue ${i}` } } });

describe('watch: one event per line, however the stream is cut', () => {
  const text = `${[0, 1, 2, 3].map(event).join('\n')}\n\n${event(4)}\r\n${event(5)}`;
  const cuts: Array<[string, number[]]> = [
    ['one chunk', []],
    ['cut inside lines', [5, 40, 41, 200, 201, 202]],
    ['cut at every newline', [...text.matchAll(/\n/g)].map((m) => m.index + 1)],
    ['a character at a time for a stretch', Array.from({ length: 60 }, (_, i) => 100 + i)],
    ['cut between the bytes of a two-byte character', [text.indexOf('ä') + 1]],
  ];
  it.each(cuts)('%s', async (_, at) => {
    chunks = [];
    let prev = 0;
    for (const c of [...at, text.length]) {
      if (c > prev) chunks.push(text.slice(prev, c));
      prev = c;
    }
    const client = createKubeClient({ server: url, insecureSkipTLSVerify: false, source: 'test' });
    const names: string[] = [];
    for await (const e of client.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'ns', resourceVersion: '1' }))
      names.push(`${e.object.metadata.name}=${String((e.object as { data?: { k?: string } }).data?.k)}`);
    expect(names).toEqual([0, 1, 2, 3, 4, 5].map((i) => `cm-${i}=välue ${i}`));
    client.close?.();
  });
});
