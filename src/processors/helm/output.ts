/**
 * Reading `helm template` output: a stream of documents, each introduced by
 * "---\n# Source: <chart>/<path>\n". The stream is cut at those headers so every object keeps
 * the template it came from (for hook ordering and for messages), and each piece is parsed by
 * the plain processor's reader, which reads YAML the way kubectl (and Helm's own client) does.
 *
 * Pure: text in, objects out.
 */
import type { HoistError } from '../../util/errors.ts';
import { isHoistError } from '../../util/errors.ts';
import { readManifest } from '../manifest.ts';
import type { SourcedObject } from '../manifest.ts';
import { yamlBudget } from '../yaml/budget.ts';

export interface HelmOutputPiece {
  /** helm's "# Source:" path; "" for text before the first header */
  source: string;
  text: string;
}

const SOURCE_HEADER = '# Source: ';

/** Cuts helm's output at its "---" + "# Source:" headers. */
export function splitHelmOutput(stdout: string): HelmOutputPiece[] {
  const lines = stdout.split('\n');
  const pieces: HelmOutputPiece[] = [];
  let source = '';
  let body: string[] = [];
  const flush = (): void => {
    if (body.some((l) => l.trim() !== '' && l.trim() !== '---')) pieces.push({ source, text: body.join('\n') });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const next = lines[i + 1];
    if (line === '---' && next !== undefined && next.startsWith(SOURCE_HEADER)) {
      flush();
      source = next.slice(SOURCE_HEADER.length).trim();
      body = [];
      i++;
      continue;
    }
    body.push(line);
  }
  flush();
  return pieces;
}

export interface ParsedHelmOutput {
  objects: SourcedObject[];
  warnings: string[];
  errors: HoistError[];
}

/**
 * Parses every piece; documents that are not objects are collected as errors naming the
 * template (and the line within its rendered output), not thrown at the first.
 */
export async function parseHelmOutput(stdout: string, chartLabel: string): Promise<ParsedHelmOutput> {
  const objects: SourcedObject[] = [];
  const warnings: string[] = [];
  const errors: HoistError[] = [];
  // one node budget for the whole output, as for a plain bundle's files
  const budget = yamlBudget();
  for (const piece of splitHelmOutput(stdout)) {
    // The line numbers the reader reports are lines of the rendered output, not of the template.
    const file = `helm chart ${chartLabel} ${piece.source || '(output)'} (rendered)`;
    try {
      const read = await readManifest(piece.text, file, budget);
      for (const o of read.objects) objects.push({ ...o, file: piece.source });
      warnings.push(...read.warnings);
      errors.push(...read.errors);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
    }
  }
  return { objects, warnings, errors };
}
