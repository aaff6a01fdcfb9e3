/** Runs a CLI verb in-process, as the tests' user: the test kubeconfig, optionally the controller's namespace. */
import type { Io } from '../../src/cli/verbs/common.ts';
import { kubeconfigPath } from './env.ts';

export type Verb = (args: string[], io: Io) => Promise<number>;

export async function runVerb(verb: Verb, args: string[], namespace?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = { code: 0, stdout: '', stderr: '' };
  const io: Io = { out: (s) => void (r.stdout += s), err: (s) => void (r.stderr += s) };
  r.code = await verb([...args, '--kubeconfig', kubeconfigPath(), ...(namespace ? ['-n', namespace] : [])], io);
  return r;
}
