/**
 * Reads a JSON manifest stream (concatenated JSON values) as kubectl's JSON decoder does,
 * refusing integers beyond ±2^53 rather than rounding them.
 *
 * Pure: no I/O. Throws a terminal HoistError (code parse-error) naming file and line.
 */
import { processError } from '../errors.ts';
import type { JsonValue, ParsedDocument } from './values.ts';
import { ProcessCode } from '../errors.ts';

interface ReviverContext {
  source?: string;
}

/** A stream of concatenated JSON values, as kubectl's JSON decoder accepts. */
export function parseJsonStream(text: string, file: string): ParsedDocument[] {
  const documents: ParsedDocument[] = [];
  let i = 0;
  let line = 1;
  while (i < text.length) {
    // skip whitespace, counting lines
    while (i < text.length && /\s/.test(text[i] as string)) {
      if (text[i] === '\n') line++;
      i++;
    }
    if (i >= text.length) break;
    const end = jsonValueEnd(text, i);
    const chunk = text.slice(i, end);
    let value: JsonValue;
    try {
      value = JSON.parse(chunk, (_key: string, v: unknown, ctx?: ReviverContext) => {
        if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)) {
          throw new Error(`integer ${ctx.source} cannot be represented exactly (beyond ±2^53)`);
        }
        return v;
      }) as JsonValue;
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const pos = /position (\d+)/.exec(msg)?.[1];
      const errLine = pos === undefined ? line : line + countNewlines(chunk.slice(0, Number(pos)));
      throw processError(`invalid JSON: ${msg.replace(/ \(line \d+ column \d+\)/, '')}`, ProcessCode.ParseError, `${file}:${errLine}`, e);
    }
    if (value !== null) documents.push({ value, line });
    line += countNewlines(chunk);
    i = end;
  }
  return documents;
}

function countNewlines(s: string): number {
  let n = 0;
  for (const c of s) if (c === '\n') n++;
  return n;
}

/** End offset of the JSON value starting at `start`: balanced brackets outside strings. */
function jsonValueEnd(text: string, start: number): number {
  const open = text[start];
  if (open !== '{' && open !== '[') {
    // a scalar: up to the next whitespace; JSON.parse reports anything malformed
    const m = /\s/.exec(text.slice(start));
    return m ? start + m.index : text.length;
  }
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}
