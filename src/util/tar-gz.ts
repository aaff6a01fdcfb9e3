/** Packs files into a gzip-compressed tar in memory: small bundles for the demo and tests. */
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';

export async function tarGz(files: Record<string, string | Buffer>): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => void chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  for (const [name, body] of Object.entries(files)) {
    const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
    // fixed mtime: the same files always make the same bytes, hence the same sha256
    p.entry({ name, size: b.length, mode: 0o644, mtime: new Date(0) }, b);
  }
  p.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}
