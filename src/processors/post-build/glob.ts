/**
 * The shell pattern match of Flux's envsubst (github.com/fluxcd/pkg/envsubst/path, Go's
 * path.Match changed so that a trailing `*` matches the rest of the name, slashes included), on
 * byte strings (go-text.ts). `${var#pattern}` and friends call it once per prefix of the value,
 * so every byte it compares is counted against the caller's budget: a long value with a
 * pattern of many stars is refused instead of running for minutes.
 *
 * Pure but for the budget counter.
 */
import { decodeRune, RUNE_ERROR } from './go-text.ts';

export class BadPattern extends Error {}

/** counts work; `spend` throws once the budget is used up */
export interface StepBudget {
  spend(steps: number): void;
}

/** path.Match(pattern, name): whether name matches all of pattern; throws BadPattern on a malformed pattern */
export function globMatch(pattern: string, name: string, budget: StepBudget): boolean {
  Pattern: while (pattern.length > 0) {
    const { star, chunk, rest } = scanChunk(pattern);
    pattern = rest;
    if (star && chunk === '') {
      // the fork: a trailing * matches the rest of the string, slashes included
      return true;
    }
    const m = matchChunk(chunk, name, budget);
    // the last chunk must use up the name, or a star may still find a match further on
    if (m.ok && (m.rest.length === 0 || pattern.length > 0)) {
      name = m.rest;
      continue;
    }
    if (m.bad) throw new BadPattern();
    if (star) {
      for (let i = 0; i < name.length; i++) {
        const t = matchChunk(chunk, name.slice(i + 1), budget);
        if (t.ok) {
          if (pattern.length === 0 && t.rest.length > 0) continue;
          name = t.rest;
          continue Pattern;
        }
        if (t.bad) throw new BadPattern();
      }
    }
    return false;
  }
  return name.length === 0;
}

function scanChunk(pattern: string): { star: boolean; chunk: string; rest: string } {
  let star = false;
  while (pattern.length > 0 && pattern[0] === '*') {
    pattern = pattern.slice(1);
    star = true;
  }
  let inRange = false;
  let i = 0;
  for (; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      if (i + 1 < pattern.length) i++;
    } else if (c === '[') inRange = true;
    else if (c === ']') inRange = false;
    else if (c === '*' && !inRange) break;
  }
  return { star, chunk: pattern.slice(0, i), rest: pattern.slice(i) };
}

interface ChunkMatch {
  rest: string;
  ok: boolean;
  bad: boolean;
}

function matchChunk(chunk: string, s: string, budget: StepBudget): ChunkMatch {
  budget.spend(chunk.length + 1);
  let c = 0;
  let p = 0;
  const fail = (bad = false): ChunkMatch => ({ rest: '', ok: false, bad });
  while (c < chunk.length) {
    if (p >= s.length) return fail();
    const ch = chunk[c];
    if (ch === '[') {
      const [r, n] = decodeRune(s, p);
      p += n;
      c++;
      let negated = false;
      if (c < chunk.length && chunk[c] === '^') {
        negated = true;
        c++;
      }
      let match = false;
      let nrange = 0;
      for (;;) {
        if (c < chunk.length && chunk[c] === ']' && nrange > 0) {
          c++;
          break;
        }
        const lo = getEsc(chunk, c);
        if (lo.bad) return fail(true);
        c = lo.next;
        let hi = lo.rune;
        // Go indexes chunk[0] here unguarded; getEsc has already refused an empty remainder
        if (chunk[c] === '-') {
          const h = getEsc(chunk, c + 1);
          if (h.bad) return fail(true);
          c = h.next;
          hi = h.rune;
        }
        if (lo.rune <= r && r <= hi) match = true;
        nrange++;
      }
      if (match === negated) return fail();
    } else if (ch === '?') {
      const [, n] = decodeRune(s, p);
      p += n;
      c++;
    } else {
      if (ch === '\\') {
        c++;
        if (c >= chunk.length) return fail(true);
      }
      if (chunk[c] !== s[p]) return fail();
      p++;
      c++;
    }
  }
  return { rest: s.slice(p), ok: true, bad: false };
}

function getEsc(chunk: string, c: number): { rune: number; next: number; bad: boolean } {
  const bad = { rune: 0, next: c, bad: true };
  if (c >= chunk.length || chunk[c] === '-' || chunk[c] === ']') return bad;
  if (chunk[c] === '\\') {
    c++;
    if (c >= chunk.length) return bad;
  }
  const [r, n] = decodeRune(chunk, c);
  const next = c + n;
  if ((r === RUNE_ERROR && n === 1) || next >= chunk.length) return { rune: r, next, bad: true };
  return { rune: r, next, bad: false };
}
