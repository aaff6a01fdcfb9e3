/**
 * The controller's logger writes stdout off the event loop: nothing pending is lost at exit, and
 * a stdout that is not read holds at most MAX_PENDING_LOG_BYTES before lines are dropped and
 * counted. Run in a child process so the exit-time flush and a real pipe are what is tested.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_PENDING_LOG_BYTES } from '../../../src/util/log.ts';

const LOG_MODULE = fileURLToPath(new URL('../../../src/util/log.ts', import.meta.url));

/** runs `body` (with `createLogger` in scope) in a child node and returns its stdout lines as JSON */
async function childLog(body: string): Promise<Array<Record<string, unknown>>> {
  const code = `import { pino } from 'pino';\nimport { createLogger } from ${JSON.stringify(LOG_MODULE)};\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exitCode = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(err, 'stderr').toBe('');
  expect(exitCode).toBe(0);
  const text = Buffer.concat(chunks).toString();
  expect(text.endsWith('\n'), 'ends with a whole line').toBe(true);
  return text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('createLogger({ async: true })', () => {
  it('writes every line logged before exit, in order', async () => {
    const lines = await childLog(`const log = createLogger({ async: true, level: 'info' });
for (let i = 0; i < 2000; i++) log.info({ i }, 'line');
process.exit(0);`);
    expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  }, 60_000);

  it('a stdout not read while the event loop is busy: lines past the bound are dropped and counted, the rest kept whole', async () => {
    // one line of ~10 KiB, logged 1,000 times in one synchronous stretch: ~10 MiB against a 4 MiB bound
    const lines = await childLog(`const log = createLogger({ async: true, level: 'info' });
const pad = 'x'.repeat(10_000);
for (let i = 0; i < 1000; i++) log.info({ i, pad }, 'line');
// once the first write has gone out and the warning that follows it has been logged (the logger's
// own handler was registered first, so its setImmediate runs before this one's second)
log[pino.symbols.streamSym].once('write', () => setImmediate(() => setImmediate(() => log.info('after'))));`);
    const kept = lines.filter((l) => l.msg === 'line');
    const told = lines.filter((l) => l.msg === 'log lines dropped: stdout was not read fast enough');
    expect(told).toHaveLength(1);
    expect(told[0]!.droppedLines).toBe(1000 - kept.length);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length * 10_000).toBeLessThanOrEqual(MAX_PENDING_LOG_BYTES + 64 * 1024);
    // the kept ones are the first ones, in order
    expect(kept.map((l) => l.i)).toEqual(Array.from({ length: kept.length }, (_, i) => i));
    expect(lines.at(-1)!.msg).toBe('after');
  }, 60_000);
});
