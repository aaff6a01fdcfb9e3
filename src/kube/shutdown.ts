/**
 * Graceful shutdown on SIGTERM/SIGINT, in the order that loses no work and hands over quickly:
 * 1. fail readiness (no new traffic, the rollout sees us leaving);
 * 2. stop the controllers: no new reconciles, in-flight ones finish within the deadline;
 * 3. stop leader election, which releases the Lease so a standby takes over at once;
 * 4. stop the informers and close the HTTP server.
 * A second signal exits at once.
 */
import type { Logger } from 'pino';

export interface Stoppable {
  stop(deadlineMs: number): Promise<unknown>;
}

export interface ShutdownOptions {
  /** default SIGTERM and SIGINT */
  signals?: NodeJS.Signals[];
  /** time for in-flight reconciles to finish (default 30s) */
  deadlineMs?: number;
  server?: { markShuttingDown(): void; close(): Promise<void> };
  controllers?: Stoppable[];
  /** aborting it must make the elector release the lease; `done` resolves once it has */
  leaderElection?: { abort: AbortController; done: Promise<void> };
  informers?: { stop(): Promise<void> }[];
  logger?: Logger;
  /** called with true when everything stopped within the deadline; exit the process here */
  onDone?: (clean: boolean) => void;
  /** on a second signal; default process.exit(130) */
  onForce?: () => void;
}

export interface ShutdownHandle {
  /** run the sequence now (also what a signal does); resolves true when it was clean */
  shutdown(reason: string): Promise<boolean>;
  /** remove the signal handlers */
  dispose(): void;
}

export function handleShutdown(opts: ShutdownOptions): ShutdownHandle {
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const deadlineMs = opts.deadlineMs ?? 30_000;
  let running: Promise<boolean> | undefined;

  const shutdown = (reason: string): Promise<boolean> => {
    running ??= (async () => {
      opts.logger?.info({ reason, deadlineMs }, 'shutting down');
      opts.server?.markShuttingDown();
      const results = await Promise.all((opts.controllers ?? []).map((c) => c.stop(deadlineMs)));
      const clean = results.every((r) => r !== false);
      if (opts.leaderElection) {
        opts.leaderElection.abort.abort(new Error(reason));
        await opts.leaderElection.done;
      }
      await Promise.all((opts.informers ?? []).map((i) => i.stop()));
      await opts.server?.close();
      opts.logger?.info({ clean }, 'shut down');
      opts.onDone?.(clean);
      return clean;
    })();
    return running;
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    if (running) {
      opts.logger?.warn({ signal }, 'second signal, exiting now');
      (opts.onForce ?? (() => process.exit(130)))();
      return;
    }
    void shutdown(signal);
  };
  for (const s of signals) process.on(s, onSignal);
  return {
    shutdown,
    dispose: () => {
      for (const s of signals) process.off(s, onSignal);
    },
  };
}
