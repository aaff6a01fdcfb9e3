/**
 * Go strings in JavaScript: Flux's envsubst (github.com/fluxcd/pkg/envsubst) works on Go strings,
 * which are bytes — `${#var}` counts bytes, `${var:2:3}` slices bytes, its scanner steps over
 * UTF-8 with utf8.DecodeRuneInString. So the port keeps text as a "byte string": a JavaScript
 * string with one character per byte (0–255, latin1), which V8 stores one byte per character, and
 * decodes runes from it the way Go does.
 *
 * Pure.
 */

/** UTF-8 text → byte string */
export function toBytes(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/** byte string → text (invalid UTF-8 becomes U+FFFD, as Go's conversion to runes would read it) */
export function fromBytes(bytes: string): string {
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** whether a byte string is valid UTF-8 (utf8.ValidString) */
export function isValidUtf8(bytes: string): boolean {
  for (let i = 0; i < bytes.length;) {
    const [r, w] = decodeRune(bytes, i);
    if (r === RUNE_ERROR && w === 1) return false;
    i += w;
  }
  return true;
}

export const RUNE_ERROR = 0xfffd;

/**
 * utf8.DecodeRuneInString(s[i:]): the rune at byte i and its width; an invalid or short sequence
 * is (RuneError, 1), the end of the string (RuneError, 0).
 */
export function decodeRune(s: string, i: number): [rune: number, width: number] {
  if (i >= s.length) return [RUNE_ERROR, 0];
  const b0 = s.charCodeAt(i);
  if (b0 < 0x80) return [b0, 1];
  let need: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) need = 1;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    need = 2;
    if (b0 === 0xe0) lo = 0xa0;
    else if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    need = 3;
    if (b0 === 0xf0) lo = 0x90;
    else if (b0 === 0xf4) hi = 0x8f;
  } else return [RUNE_ERROR, 1];
  if (s.length - i - 1 < need) return [RUNE_ERROR, 1];
  const b1 = s.charCodeAt(i + 1);
  if (b1 < lo || b1 > hi) return [RUNE_ERROR, 1];
  let r = need === 1 ? b0 & 0x1f : need === 2 ? b0 & 0x0f : b0 & 0x07;
  r = (r << 6) | (b1 & 0x3f);
  for (let k = 2; k <= need; k++) {
    const b = s.charCodeAt(i + k);
    if (b < 0x80 || b > 0xbf) return [RUNE_ERROR, 1];
    r = (r << 6) | (b & 0x3f);
  }
  return [r, need + 1];
}

/** string(rune) in Go: the rune's UTF-8 bytes (an invalid rune becomes U+FFFD) */
export function encodeRune(r: number): string {
  if (r < 0 || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) r = RUNE_ERROR;
  if (r < 0x80) return String.fromCharCode(r);
  if (r < 0x800) return String.fromCharCode(0xc0 | (r >> 6), 0x80 | (r & 0x3f));
  if (r < 0x10000) return String.fromCharCode(0xe0 | (r >> 12), 0x80 | ((r >> 6) & 0x3f), 0x80 | (r & 0x3f));
  return String.fromCharCode(0xf0 | (r >> 18), 0x80 | ((r >> 12) & 0x3f), 0x80 | ((r >> 6) & 0x3f), 0x80 | (r & 0x3f));
}

/** []rune(s): each rune of a byte string (invalid bytes are RuneError, one each) */
export function runesOf(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length;) {
    const [r, w] = decodeRune(s, i);
    out.push(r);
    i += w;
  }
  return out;
}

const LETTER = /^\p{L}$/u;
const DIGIT = /^\p{Nd}$/u;

/** unicode.IsLetter */
export function isLetter(r: number): boolean {
  if (r < 0x80) return (r >= 0x41 && r <= 0x5a) || (r >= 0x61 && r <= 0x7a);
  return r <= 0x10ffff && !(r >= 0xd800 && r <= 0xdfff) && LETTER.test(String.fromCodePoint(r));
}

/** unicode.IsDigit */
export function isDigit(r: number): boolean {
  if (r < 0x80) return r >= 0x30 && r <= 0x39;
  return r <= 0x10ffff && !(r >= 0xd800 && r <= 0xdfff) && DIGIT.test(String.fromCodePoint(r));
}

/**
 * Go's unicode.ToUpper / ToLower are Unicode's simple (one rune to one rune) case mappings;
 * JavaScript's toUpperCase / toLowerCase are the full ones. Where the full mapping of a character
 * is one character it equals the simple one; where it is several, Unicode's simple mapping is the
 * character itself except for these (UnicodeData.txt fields 12 and 13), which Go maps.
 */
const SIMPLE_UPPER: ReadonlyMap<number, number> = new Map([
  // Greek with ypogegrammeni: ᾀ → ᾈ (the full mapping is ἈΙ)
  ...range(0x1f80, 0x1f87).map((r): [number, number] => [r, r + 8]),
  ...range(0x1f90, 0x1f97).map((r): [number, number] => [r, r + 8]),
  ...range(0x1fa0, 0x1fa7).map((r): [number, number] => [r, r + 8]),
  [0x1fb3, 0x1fbc],
  [0x1fc3, 0x1fcc],
  [0x1ff3, 0x1ffc],
]);
const SIMPLE_LOWER: ReadonlyMap<number, number> = new Map([[0x0130, 0x0069]]);

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function simpleCase(r: number, upper: boolean): number {
  if (r < 0x80) {
    if (upper) return r >= 0x61 && r <= 0x7a ? r - 32 : r;
    return r >= 0x41 && r <= 0x5a ? r + 32 : r;
  }
  if (r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return r;
  const special = (upper ? SIMPLE_UPPER : SIMPLE_LOWER).get(r);
  if (special !== undefined) return special;
  const c = String.fromCodePoint(r);
  const mapped = upper ? c.toUpperCase() : c.toLowerCase();
  const cp = mapped.codePointAt(0)!;
  return mapped.length === String.fromCodePoint(cp).length ? cp : r;
}

/** unicode.ToUpper of one rune */
export function toUpperRune(r: number): number {
  return simpleCase(r, true);
}

/** unicode.ToLower of one rune */
export function toLowerRune(r: number): number {
  return simpleCase(r, false);
}

/** strings.Map(f, s): every rune mapped, invalid bytes becoming U+FFFD */
export function mapRunes(s: string, f: (r: number) => number): string {
  const parts: string[] = [];
  for (let i = 0; i < s.length;) {
    const [r, w] = decodeRune(s, i);
    parts.push(encodeRune(f(r)));
    i += w;
  }
  return parts.join('');
}
