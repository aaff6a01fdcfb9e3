/**
 * Keeping secret values out of text: the strings to blank out (longest first, so a value that
 * contains another is blanked whole) and the blanking. Shorter strings than MIN_REDACTED_LENGTH
 * are not blanked: they would blank ordinary words ("true", "80", "a").
 *
 * Pure.
 */

/** shorter strings are not blanked out of text */
export const MIN_REDACTED_LENGTH = 4;
export const REDACTED = '<redacted>';

/** `strings` deduplicated, long enough to blank, longest first */
export function redactionList(strings: Iterable<string>): string[] {
  const found = new Set<string>();
  for (const s of strings) if (s.length >= MIN_REDACTED_LENGTH) found.add(s);
  return [...found].sort((a, b) => b.length - a.length);
}

/** `text` with every one of `secrets` (a redactionList) replaced by <redacted> */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.replaceAll(s, REDACTED);
  return out;
}
