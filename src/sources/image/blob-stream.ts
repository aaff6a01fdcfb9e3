/**
 * A blob's bytes from the registry, verified while they stream: size and digest are checked over
 * the raw bytes before the stream reports its end (RegistryClient.openBlob hands these out).
 *
 * Memory stays bounded: one chunk at a time, nothing buffered.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { errorText, imageError, type ImageStage } from './errors.ts';
import type { Descriptor } from './manifest.ts';
import { SourceCode } from '../errors.ts';

/**
 * A blob's bytes, verified while they stream. Iterate it (once) to read; the final `next()`
 * checks size and digest and throws instead of finishing when they do not match.
 *
 * A consumer may stop early (a tar reader stops at the end-of-archive marker, before trailing
 * padding). Its `return()` therefore does not discard the body: call `finish()` afterwards to
 * read and hash whatever is left, which verifies the blob as a whole. `abort()` drops the
 * connection.
 */
export class BlobStream implements AsyncIterable<Uint8Array> {
  private readonly hash: Hash;
  private readonly iterator: AsyncIterator<Buffer>;
  private bytes = 0;
  private done = false;
  private verified = false;

  constructor(
    private readonly body: Dispatcher.ResponseData['body'],
    readonly descriptor: Descriptor,
    private readonly subject: string,
    private readonly stage: ImageStage,
  ) {
    this.hash = createHash(descriptor.digest.startsWith('sha512:') ? 'sha512' : 'sha256');
    this.iterator = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  /** bytes read so far */
  get bytesRead(): number {
    return this.bytes;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => this.next(),
      // keep the body: finish() hashes the rest
      return: async () => ({ done: true, value: undefined }),
    };
  }

  /** Reads the rest (if any) and verifies. Idempotent. */
  async finish(): Promise<void> {
    while (!this.done) await this.next();
  }

  abort(): void {
    this.done = true;
    this.body.destroy();
  }

  private async next(): Promise<IteratorResult<Uint8Array>> {
    if (this.done) {
      if (!this.verified) throw new Error('blob stream was aborted');
      return { done: true, value: undefined };
    }
    let r: IteratorResult<Buffer>;
    try {
      r = await this.iterator.next();
    } catch (e) {
      this.done = true;
      throw imageError(
        this.stage,
        SourceCode.Truncated,
        `blob ${this.descriptor.digest} ended after ${this.bytes} of ${this.descriptor.size} bytes: ${errorText(e)}`,
        this.subject,
        false,
        e,
      );
    }
    if (r.done) {
      this.done = true;
      if (this.bytes < this.descriptor.size) {
        throw imageError(
          this.stage,
          SourceCode.Truncated,
          `blob ${this.descriptor.digest} is truncated: ${this.bytes} of ${this.descriptor.size} bytes`,
          this.subject,
          false,
        );
      }
      const got = `${this.descriptor.digest.split(':')[0]}:${this.hash.digest('hex')}`;
      if (got !== this.descriptor.digest) {
        throw imageError(this.stage, SourceCode.DigestMismatch, `blob digest mismatch: expected ${this.descriptor.digest}, got ${got}`, this.subject, true);
      }
      this.verified = true;
      return { done: true, value: undefined };
    }
    this.bytes += r.value.length;
    if (this.bytes > this.descriptor.size) {
      this.abort();
      throw imageError(
        this.stage,
        SourceCode.SizeMismatch,
        `blob ${this.descriptor.digest} is larger than the ${this.descriptor.size} bytes its manifest declares`,
        this.subject,
        true,
      );
    }
    this.hash.update(r.value);
    return { done: false, value: r.value };
  }
}
