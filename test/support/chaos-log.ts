/**
 * What the controller did during a chaos run, read from the pino JSON lines of its processes (one
 * per life between SIGKILLs): reconciles and failed reconciles (by stage and first error words)
 * in a time window, and when a BD was first reconciled at a revision. The chaos report is built
 * from these, so every number in it comes from the controller's own log.
 */

export interface ControllerLine {
  /** epoch ms (pino's default `time`) */
  time: number;
  msg: string;
  /** which controller process wrote it (0 = the first started in the wave) */
  life: number;
  bd?: string;
  stage?: string;
  err?: string;
  revision?: number;
}

export function parseControllerLog(text: string, life: number): ControllerLine[] {
  const out: ControllerLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (typeof o.time !== 'number' || typeof o.msg !== 'string') continue;
      out.push({
        time: o.time,
        msg: o.msg,
        life,
        ...(typeof o.bd === 'string' ? { bd: o.bd } : {}),
        ...(typeof o.stage === 'string' ? { stage: o.stage } : {}),
        ...(typeof o.err === 'string' ? { err: o.err } : {}),
        ...(typeof o.revision === 'number' ? { revision: o.revision } : {}),
      });
    } catch {
      // a line cut short by SIGKILL
    }
  }
  return out;
}

export interface WindowSummary {
  reconciles: number;
  failedReconciles: number;
  /** failed reconciles by "stage: first words of the error", most frequent first (at most 5) */
  failures: Array<{ what: string; count: number }>;
}

/** what the controller logged in [from, to] (epoch ms) */
export function summarize(lines: readonly ControllerLine[], from: number, to: number): WindowSummary {
  const inWindow = lines.filter((l) => l.time >= from && l.time <= to);
  const failed = inWindow.filter((l) => l.msg === 'reconcile failed');
  const byWhat = new Map<string, number>();
  for (const f of failed) {
    // the error's first words, without the host:port and digests that differ per BD
    const words = (f.err ?? '')
      .replace(/127\.0\.0\.1:\d+/g, '<host>')
      .replace(/sha256:[0-9a-f]{64}/g, '<digest>')
      .replace(/chaos-[0-9a-f]+-\d+/g, '<bd>')
      .replace(/hoist-rev-[0-9a-f]+/g, 'hoist-rev-<hash>')
      .slice(0, 90);
    const what = `${f.stage ?? '?'}: ${words}`;
    byWhat.set(what, (byWhat.get(what) ?? 0) + 1);
  }
  return {
    reconciles: inWindow.filter((l) => l.msg === 'reconciled').length,
    failedReconciles: failed.length,
    failures: [...byWhat]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([what, count]) => ({ what, count })),
  };
}
