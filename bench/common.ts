/** What every benchmark module shares: writing its JSON summary and running when executed directly. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** writes bench/results/<name>.json and says so */
export async function writeResult(resultsFile: string, result: { nproc: number }, log: (line: string) => void): Promise<void> {
  await mkdir(path.dirname(resultsFile), { recursive: true });
  await writeFile(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${path.relative(repoRoot, resultsFile)} (nproc ${result.nproc})`);
}

/** runs `run` when the module at `moduleUrl` is the process's entry point (`tsx bench/x.ts`) */
export function runWhenMain(moduleUrl: string, run: () => Promise<unknown>): void {
  if (!process.argv[1] || pathToFileURL(path.resolve(process.argv[1])).href !== moduleUrl) return;
  run().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
