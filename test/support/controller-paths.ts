/**
 * Issue 16: status messages and events name bundle-relative paths, never the controller's own
 * directories (the content store, temp trees, helm homes). Failure tests pass every condition
 * message they produce through this check.
 */
import { tmpdir } from 'node:os';
import { expect } from 'vitest';

/** Directory names only the controller's own filesystem has. */
const CONTROLLER_MARKERS = [/\/entries\/[0-9a-f]{16,}/, /\/cache\/entries\//, /hoist-(tree|helm|store|unpack)-[A-Za-z0-9]{4,}/, /\/content\/[^\s"]*\.ya?ml/];

/** Fails when `message` names the temp directory, the store, or any of `roots`. */
export function expectNoControllerPaths(message: string, roots: readonly string[] = []): void {
  for (const dir of [tmpdir(), process.cwd(), ...roots]) {
    if (dir.length > 1) expect(message, `message names controller directory ${dir}`).not.toContain(dir);
  }
  for (const m of CONTROLLER_MARKERS) expect(message, `message names a controller path (${m})`).not.toMatch(m);
}
