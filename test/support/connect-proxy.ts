/**
 * A real forward proxy for tests: answers CONNECT by opening a TCP tunnel to the target and logs
 * every CONNECT (and any plain absolute-form request, which it refuses), so a test can prove
 * that a client went through HTTPS_PROXY. It never sees inside the TLS tunnel.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ConnectProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  /** `host:port` of every CONNECT, in order */
  readonly connects: string[];
  /** absolute-form requests (plain-http proxying), refused with 502 */
  readonly plain: string[];
  close(): Promise<void>;
}

export async function startConnectProxy(): Promise<ConnectProxy> {
  const connects: string[] = [];
  const plain: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    plain.push(`${req.method} ${req.url}`);
    res.writeHead(502).end('this proxy only tunnels');
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    connects.push(target);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connects,
    plain,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
