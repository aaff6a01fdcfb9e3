/**
 * A TCP proxy between a client and the API server that tests can break on purpose: cut every
 * connection (RST-like), freeze connections (bytes stop flowing but nothing closes: a half-open
 * connection), or refuse new connections for a while (API server down).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** connections currently open through the proxy */
  readonly connections: number;
  /** destroy every open connection */
  cutAll(): void;
  /** stop forwarding on every open connection without closing it; new connections still work */
  freezeAll(): void;
  /** stop listening (new connections are refused) and cut open ones */
  down(): Promise<void>;
  /** listen again on the same port */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let frozen = new Set<[Socket, Socket]>();
  const onConnection = (client: Socket): void => {
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const addr = server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  const port = await listen(0);
  const cutAll = (): void => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  return {
    url: `https://127.0.0.1:${port}`,
    get connections() {
      return pairs.size;
    },
    cutAll,
    freezeAll() {
      for (const pair of pairs) {
        pair[0].unpipe(pair[1]);
        pair[1].unpipe(pair[0]);
        pair[0].pause();
        pair[1].pause();
        frozen.add(pair);
      }
      // frozen pairs no longer count as live connections for the test's purposes
      for (const pair of frozen) pairs.delete(pair);
    },
    async down() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        cutAll();
        // server.close() waits for every connection, frozen ones included
        for (const [a, b] of frozen) {
          a.destroy();
          b.destroy();
        }
        frozen = new Set();
      });
    },
    async up() {
      server = createServer(onConnection);
      await listen(port);
    },
    async close() {
      cutAll();
      for (const [a, b] of frozen) {
        a.destroy();
        b.destroy();
      }
      frozen = new Set();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
