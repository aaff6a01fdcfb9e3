/**
 * What crosses between the controller's thread and a render thread (render-pool.ts,
 * render-worker.ts): plain data only, since postMessage's structured clone keeps neither classes
 * nor functions. A HoistError goes as its fields and comes back as a HoistError with the same
 * stage, code, subject and terminal flag, so the reconciler decides on it exactly as on one
 * thrown in its own thread.
 */
import type { BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { HoistError, isHoistError, type FailureReason, type HoistCode, type Stage } from '../../util/errors.ts';
import type { ProcessContext, ProcessResult } from '../processor.ts';

export interface RenderRequest {
  id: number;
  format: BundleDeploymentSpec['format'];
  tree: string;
  config: BundleDeploymentSpec['config'];
  ctx: ProcessContext;
}

export interface WireError {
  message: string;
  name: string;
  hoist?: { stage: Stage; reason: FailureReason; code: HoistCode; subject: string | undefined; terminal: boolean };
}

export type RenderReply = { id: number; result: ProcessResult } | { id: number; error: WireError };

export function toWire(e: unknown): WireError {
  if (isHoistError(e))
    return { message: e.message, name: e.name, hoist: { stage: e.stage, reason: e.reason, code: e.code, subject: e.subject, terminal: e.terminal } };
  if (e instanceof Error) return { message: e.message, name: e.name };
  return { message: String(e), name: 'Error' };
}

export function fromWire(w: WireError): Error {
  if (w.hoist) {
    const { stage, reason, code, subject, terminal } = w.hoist;
    return new HoistError(w.message, { stage, reason, code, terminal, ...(subject === undefined ? {} : { subject }) });
  }
  const e = new Error(w.message);
  e.name = w.name;
  return e;
}
