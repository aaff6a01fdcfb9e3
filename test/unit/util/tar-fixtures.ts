/**
 * Builds tar archives in-process for tests, including hostile ones (tar-stream's packer writes
 * whatever header it is given, which is exactly what a hostile archive is).
 */
import { gzipSync } from 'node:zlib';
import * as tar from 'tar-stream';

export type TarHeader = tar.Header;
export interface TarItem {
  header: Partial<TarHeader> & { name: string };
  body?: string | Buffer;
}

/** A plain (uncompressed) tar of the items, in order. */
export async function buildTar(items: TarItem[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of pack as AsyncIterable<Buffer>) chunks.push(c);
  })();
  for (const item of items) {
    await new Promise<void>((resolve, reject) => {
      // always hand over a buffer (empty by default): without one the packer waits for data
      const body = Buffer.from(item.body ?? '');
      pack.entry({ ...item.header, size: body.length }, body, (err) => (err ? reject(err) : resolve()));
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

export async function buildTarGz(items: TarItem[]): Promise<Buffer> {
  return gzipSync(await buildTar(items));
}

/** One-chunk async iterable over a buffer, split into pieces to exercise chunk boundaries. */
export async function* chunked(buf: Buffer, size = 7_000): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

/** A tar header block (512 bytes) for a regular file of `size` bytes, without its data. */
export function fileHeader(name: string, size: number): Buffer {
  // pack.entry with a declared size and no data would wait for the data; build the block by hand
  const block = Buffer.alloc(512, 0);
  block.write(name, 0, 100, 'utf8');
  block.write('0000644\0', 100, 'ascii');
  block.write('0000000\0', 108, 'ascii');
  block.write('0000000\0', 116, 'ascii');
  block.write(size.toString(8).padStart(11, '0') + '\0', 124, 'ascii');
  block.write('00000000000\0', 136, 'ascii');
  block.write('        ', 148, 'ascii'); // checksum placeholder: spaces
  block.write('0', 156, 'ascii');
  block.write('ustar\0', 257, 'ascii');
  block.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of block) sum += b;
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return block;
}
