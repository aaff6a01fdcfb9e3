/**
 * The part of a repository index one chart needs, cut out of the index's bytes without parsing
 * the rest, for the two layouts Helm writes (helm.sh/helm pkg/repo IndexFile.WriteFile and
 * WriteJSONFile):
 *
 * - **YAML** (`yaml.Marshal`: go-yaml v2 block style): top-level keys at column 0, `entries:`
 *   alone on its line, each chart name at one indentation (two spaces) as `  name:`, `  "1.0":`
 *   or `  'weird: name':`, and everything of that chart on the lines below it, indented more
 *   or starting `- ` at the name's indentation. The cut keeps the `apiVersion` line(s) and the
 *   chart's lines, in their order. A YAML parser refuses a quoted or flow scalar continued on a
 *   line indented that little, and a block scalar ends there, so for any index it accepts, a
 *   line at the names' indentation or less is structure, never content.
 * - **JSON** (`json.MarshalIndent`, or any other whitespace): the object's members at depth one
 *   and the members of `entries` at depth two are found by a string-aware bracket scan that
 *   checks the tokens' order as JSON's grammar has it; the cut is a JSON object of the
 *   `apiVersion` members and the chart's members, as written.
 *
 * Chart names are resolved as the YAML reader resolves map keys (go-yaml v2: a plain `yes` is
 * the key "true", `1.0` is "1"); the names list is every name the entries hold. The cut parses
 * to the same `apiVersion` and the same value for the chart as the whole index does. Anything
 * the scan does not recognize (flow style, a second document, tabs or lone carriage returns,
 * explicit `?` keys, escapes YAML does not have, an alias in the cut while the rest may define
 * anchors, JSON out of grammar, ...) answers `whole` with the reason, and the caller parses the
 * whole index.
 * What is not parsed is not checked: a syntax error or an alias bomb inside another chart's
 * entries does not fail this chart (Helm, parsing everything, would refuse the index).
 *
 * Pure; gives the event loop back every few milliseconds (the scan of a 50 MiB index takes a few
 * hundred of them) and stops with the signal.
 */
import { setImmediate } from 'node:timers/promises';
import { hasAliasYielding } from '../../processors/yaml/prescan.ts';
import { resolveYamlScalar } from '../../processors/yaml/scalars.ts';
import { keyString } from '../../processors/yaml/walk.ts';

export type IndexSlice =
  /** `text` is the cut, to be parsed as YAML or JSON; `names` every chart name, sorted */
  | { layout: 'yaml' | 'json'; text: string; names: string[] }
  /** the layout is not one the scan reads: parse the whole index */
  | { layout: 'whole'; why: string };

export interface SliceOptions {
  signal?: AbortSignal;
  /**
   * the most chart names the scan keeps (they are the "not in the index" message): past it, the
   * whole index decides. parseIndex passes half the node budget, each name being at least a key
   * and a value node of the whole parse, so the whole parse refuses such an index as well.
   */
  maxNames?: number;
}

/** Cuts `chart`'s part out of an index (module comment). */
export async function sliceIndex(index: Buffer, chart: string, opts: SliceOptions = {}): Promise<IndexSlice> {
  opts.signal?.throwIfAborted();
  const scan: Scan = { pace: new Pace(opts.signal), maxNames: opts.maxNames ?? Infinity };
  let i = 0;
  while (i < index.length && isJsonSpace(index[i]!)) i++;
  return index[i] === OPEN_BRACE ? sliceJson(index, i, chart, scan) : sliceYaml(index, chart, scan);
}

interface Scan {
  pace: Pace;
  maxNames: number;
}

const tooManyNames = (scan: Scan): IndexSlice => whole(`the index names more than ${scan.maxNames} charts`);

const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const HASH = 0x23;
const DASH = 0x2d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const AMPERSAND = 0x26;

/** how long a scan runs before it lets the event loop serve others */
const SLICE_MS = 5;

/** yields to the event loop once SLICE_MS have passed since the last time */
class Pace {
  readonly signal: AbortSignal | undefined;
  private since = performance.now();

  constructor(signal: AbortSignal | undefined) {
    this.signal = signal;
  }

  async tick(): Promise<void> {
    if (performance.now() - this.since < SLICE_MS) return;
    await setImmediate();
    this.signal?.throwIfAborted();
    this.since = performance.now();
  }
}

const whole = (why: string): IndexSlice => ({ layout: 'whole', why });

// ---------------------------------------------------------------------------------------------
// YAML

/** line breaks YAML 1.1 readers know besides \n and \r\n, and a BOM: left to the whole parse */
const ODD_BYTES: ReadonlyArray<[Buffer, string]> = [
  [Buffer.from('\u0085'), 'a NEL character'],
  [Buffer.from('\u2028'), 'a line separator character'],
  [Buffer.from('\u2029'), 'a paragraph separator character'],
  [Buffer.from('\ufeff'), 'a byte order mark'],
];

/** a top-level key as Helm writes them (`apiVersion:`, `entries:`, `generated: ...`) */
const TOP_KEY = /^([A-Za-z_][A-Za-z0-9_]*):(?:$|[ ]+(.*)$)/;
/** what may follow `entries:` on its line */
const NOTHING = /^(?:#.*)?$/;
/** an `apiVersion` line the cut can keep: one plain or quoted scalar, nothing continued below */
const API_VERSION = /^apiVersion:(?:[ ]*|[ ]+(?:[A-Za-z0-9_][A-Za-z0-9_./+-]*|"[^"\\]*"|'(?:[^']|'')*')[ ]*(?:[ ]#.*)?)$/;
/**
 * A chart name line: a double-quoted name (escapes as YAML has them: go-yaml writes characters
 * beyond the BMP as `\U0001F680`), a single-quoted one, or a plain one (starting with a letter,
 * digit or `_`, or one of `-./+` and another character; no `:`, `#`, control characters or
 * whitespace but spaces inside, so the plain scalar is exactly that text), then `:` and
 * nothing, or ` []` (a chart without versions), or a comment.
 */
const NAME_LINE =
  /^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|((?:[\p{L}\p{N}_]|[-./+][^\s:#\p{Cc}])[^\s:#\p{Cc}]*(?: +[^\s:#\p{Cc}]+)*)):(?:[ ]*|[ ]+\[\][ ]*)(?:[ ]#.*)?$/u;
/** a name line longer than this is left to the whole parse (the reference reader refuses implicit keys over 1024 characters, as go-yaml does) */
const MAX_NAME_CHARS = 1000;

interface Block {
  start: number;
  end: number;
}

interface Entries {
  /** offset of the `entries:` line */
  at: number;
  /** indentation of the chart names (set by the first) */
  indent: number | undefined;
  /** the block being read, if any */
  current: Block | undefined;
  /** the chart's blocks (a name may repeat: the last wins, as in the whole parse) */
  kept: Block[];
  names: Set<string>;
}

async function sliceYaml(buf: Buffer, chart: string, scan: Scan): Promise<IndexSlice> {
  const pace = scan.pace;
  for (const [bytes, what] of ODD_BYTES) if (buf.includes(bytes)) return whole(`the index holds ${what}`);
  for (let cr = buf.indexOf(CR); cr !== -1; cr = buf.indexOf(CR, cr + 1)) {
    if (buf[cr + 1] !== NL) return whole('the index holds a carriage return that does not end a line');
  }
  /** the `apiVersion` lines, kept as written */
  const apiVersions: Block[] = [];
  let entries: Entries | undefined;
  let inEntries = false;
  let topKey: string | undefined;
  let topKeyLine = 0;
  let sawContent = false;
  let lineNo = 0;
  for (let pos = 0; pos < buf.length;) {
    let end = buf.indexOf(NL, pos);
    if (end === -1) end = buf.length;
    const next = end + 1;
    const stop = end > pos && buf[end - 1] === CR ? end - 1 : end;
    lineNo++;
    if ((lineNo & 255) === 0) await pace.tick();
    let i = pos;
    while (i < stop && buf[i] === SPACE) i++;
    const indent = i - pos;
    const c = buf[i];
    // blank lines and comments change nothing: inside a chart's block they stay in it
    if (i === stop || c === HASH) {
      pos = next;
      continue;
    }
    if (c === TAB) {
      if (isBlank(buf, i, stop)) {
        pos = next;
        continue;
      }
      return whole(`line ${lineNo} is indented with a tab`);
    }
    const item = c === DASH && (i + 1 === stop || buf[i + 1] === SPACE);
    if (!sawContent) {
      sawContent = true;
      // one document start marker before everything (Ruby's and other emitters write one)
      if (indent === 0 && /^---[ ]*(?:[ ]#.*)?$/.test(buf.toString('latin1', i, stop))) {
        pos = next;
        continue;
      }
    }
    if (indent === 0) {
      if (inEntries) {
        closeBlock(entries!, pos);
        inEntries = false;
      }
      if (item) {
        // an item of a top-level sequence (publicKeys): the cut does not need it
        if (topKey === undefined || topKey === 'apiVersion' || topKey === 'entries') return whole(`line ${lineNo} is a sequence item where a key is expected`);
        pos = next;
        continue;
      }
      const line = buf.toString('utf8', i, stop);
      const m = TOP_KEY.exec(line);
      if (!m) return whole(`line ${lineNo} is not a plain key at column 0`);
      topKey = m[1]!;
      topKeyLine = lineNo;
      if (topKey === 'entries') {
        if (!NOTHING.test(m[2] ?? '')) return whole(`entries (line ${lineNo}) is not a block mapping`);
        // a repeated key: the last one wins, in the whole parse too
        entries = { at: pos, indent: undefined, current: undefined, kept: [], names: new Set() };
        inEntries = true;
      } else if (topKey === 'apiVersion') {
        if (!API_VERSION.test(line)) return whole(`apiVersion (line ${lineNo}) is not a one-line scalar`);
        apiVersions.push({ start: pos, end: Math.min(next, buf.length) });
      }
      pos = next;
      continue;
    }
    if (!inEntries) {
      // the value of a top-level key the cut drops
      if (topKey === undefined) return whole(`line ${lineNo} is indented before any top-level key`);
      if (topKey === 'apiVersion') return whole(`apiVersion (line ${topKeyLine}) continues on line ${lineNo}`);
      pos = next;
      continue;
    }
    const e = entries!;
    e.indent ??= indent;
    if (indent > e.indent || (indent === e.indent && item)) {
      if (!e.current) return whole(`line ${lineNo} is not under a chart name`);
      pos = next;
      continue;
    }
    if (indent < e.indent) return whole(`line ${lineNo} is indented less than the chart names above it`);
    const name = chartName(buf.toString('utf8', i, stop));
    if (name === undefined) return whole(`line ${lineNo} is not a chart name as Helm writes it`);
    closeBlock(e, pos);
    e.current = { start: pos, end: buf.length };
    e.names.add(name);
    if (e.names.size > scan.maxNames) return tooManyNames(scan);
    if (name === chart) e.kept.push(e.current);
    pos = next;
  }
  if (inEntries) closeBlock(entries!, buf.length);
  return cutYaml(buf, apiVersions, entries, topKey !== undefined, pace.signal);
}

function closeBlock(e: Entries, at: number): void {
  if (e.current) e.current.end = at;
  e.current = undefined;
}

function isBlank(buf: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (buf[i] !== SPACE && buf[i] !== TAB) return false;
  return true;
}

/** The key a chart name line holds, as the whole parse reads it; undefined when the scan leaves it to that parse. */
function chartName(line: string): string | undefined {
  const m = line.length > MAX_NAME_CHARS ? null : NAME_LINE.exec(line);
  if (!m) return undefined;
  const [, doubled, single, plain] = m;
  if (doubled !== undefined) return unescapeDoubleQuoted(doubled);
  if (single !== undefined) return single.replaceAll("''", "'");
  if (plain === undefined) return undefined;
  // a plain key means what go-yaml v2 makes of it: `yes` is "true", `1.0` is "1"; a null key is refused by the whole parse
  return keyString(resolveYamlScalar(plain));
}

/** YAML's double-quoted escapes (YAML 1.2 §5.7); undefined for one it does not have */
const ESCAPES: Readonly<Record<string, string>> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  '\t': '\t',
  n: '\n',
  v: '\v',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\u0085',
  _: '\u00a0',
  L: '\u2028',
  P: '\u2029',
};
const HEX_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

function unescapeDoubleQuoted(text: string): string | undefined {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = text[++i]!;
    const digits = HEX_DIGITS[e];
    if (digits !== undefined) {
      const hex = text.slice(i + 1, i + 1 + digits);
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== digits) return undefined;
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff) return undefined;
      out += e === 'U' ? String.fromCodePoint(code) : String.fromCharCode(code);
      i += digits;
    } else if (Object.hasOwn(ESCAPES, e)) out += ESCAPES[e];
    else return undefined;
  }
  return out;
}

/** The cut: the apiVersion lines and `entries:` with the chart's blocks, in the index's order. */
async function cutYaml(buf: Buffer, apiVersions: readonly Block[], entries: Entries | undefined, sawKey: boolean, signal?: AbortSignal): Promise<IndexSlice> {
  const pieces: Array<{ at: number; text: string }> = apiVersions.map((b) => ({ at: b.start, text: `${buf.toString('utf8', b.start, b.end).trimEnd()}\n` }));
  const kept: Block[] = [...apiVersions];
  if (entries) {
    pieces.push({ at: entries.at, text: `entries:\n${entries.kept.map((b) => buf.toString('utf8', b.start, b.end)).join('')}` });
    kept.push(...entries.kept);
  }
  pieces.sort((a, b) => a.at - b.at);
  // an index of keys without apiVersion or entries: a mapping all the same, as the whole parse sees it
  const text = pieces.length === 0 && sawKey ? '{}\n' : pieces.map((p) => p.text).join('');
  // An alias in the cut means what the anchor of that name defined last before it means: the cut
  // may have dropped that anchor's definition (a redefinition in another chart's part)
  if (text.includes('*') && anchorOutside(buf, kept) && (await hasAliasYielding(text, signal))) {
    return whole('the chart has an alias and the rest of the index may define anchors');
  }
  return { layout: 'yaml', text, names: [...(entries?.names ?? [])].sort() };
}

/** whether an `&` (an anchor, or text that may be one) lies outside the kept blocks */
function anchorOutside(buf: Buffer, kept: readonly Block[]): boolean {
  const sorted = [...kept].sort((a, b) => a.start - b.start);
  for (let at = buf.indexOf(AMPERSAND); at !== -1; at = buf.indexOf(AMPERSAND, at + 1)) {
    if (!sorted.some((b) => at >= b.start && at < b.end)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// JSON

const OBJECT = 1;
const ARRAY = 2;
/** the bytes the JSON scan looks at; everything else (whitespace, numbers, literals) it steps over */
const STRUCTURAL = new Uint8Array(256);
for (const c of [QUOTE, COLON, COMMA, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET]) STRUCTURAL[c] = 1;

function isJsonSpace(c: number): boolean {
  return c === SPACE || c === NL || c === CR || c === TAB;
}

/** the index of the quote closing the string opened at `open`; -1 when none does */
function stringEnd(buf: Buffer, open: number): number {
  // a byte loop: most strings of an index are short, shorter than a native search is worth
  for (let j = open + 1; j < buf.length; j++) {
    const b = buf[j];
    if (b === QUOTE) return j;
    if (b === BACKSLASH) j++;
  }
  return -1;
}

/** `buf[from, to)` trimmed of JSON whitespace */
function valueText(buf: Buffer, from: number, to: number): string {
  while (from < to && isJsonSpace(buf[from]!)) from++;
  while (to > from && isJsonSpace(buf[to - 1]!)) to--;
  return buf.toString('utf8', from, to);
}

function decodeKey(buf: Buffer, start: number, end: number): string | undefined {
  try {
    const key: unknown = JSON.parse(buf.toString('utf8', start, end));
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

// what the JSON scan expects next
const VALUE = 0;
const VALUE_OR_CLOSE = 1;
const KEY = 2;
const KEY_OR_CLOSE = 3;
const AFTER_KEY = 4;
const AFTER_VALUE = 5;

/**
 * The JSON cut: `{"apiVersion": ..., "entries": {"<chart>": [...]}}` from the members as written.
 * Members are found by their depth (a bracket count outside strings), whatever the whitespace;
 * the tokens' order is checked as JSON's grammar has it (a key where a key goes, a value after
 * `:`, `,` or a closer after a value), so what the scan reads as structure is structure. The
 * content of scalars is checked only where parsed: the cut, and the root's own scalars.
 */
async function sliceJson(buf: Buffer, start: number, chart: string, scan: Scan): Promise<IndexSlice> {
  const pace = scan.pace;
  const kinds: number[] = [];
  let expect: number = VALUE;
  let inScalar = false;
  // the last key string read: [keyStart, keyEnd)
  let keyStart = -1;
  let keyEnd = -1;
  // the member of the root object being read
  let member: string | undefined;
  let memberAt = -1;
  /** the member's value is an object or array (not read as text) */
  let memberContainer = false;
  // the member of `entries` being read (while the entries object is open)
  let inEntries = false;
  let chartKey: string | undefined;
  let chartKeySpan: [number, number] = [0, 0];
  let chartAt = -1;
  const apiVersions: string[] = [];
  // the last `entries` member wins, as JSON.parse has it
  let entries: 'object' | 'null' | 'other' | undefined;
  let names = new Set<string>();
  let kept: string[] = [];
  let end = -1;
  let steps = 0;
  /** a root member ends; false when its scalar value is not JSON */
  const endMember = (at: number): boolean => {
    if (memberContainer) {
      // anything but a string is "no apiVersion" to the caller, whatever it holds
      if (member === 'apiVersion') apiVersions.push('null');
      else if (member === 'entries' && entries !== 'object') entries = 'other';
    } else {
      const v = valueText(buf, memberAt, at);
      try {
        JSON.parse(v);
      } catch {
        return false;
      }
      if (member === 'apiVersion') apiVersions.push(v.startsWith('"') ? v : 'null');
      else if (member === 'entries') entries = v === 'null' ? 'null' : 'other';
    }
    member = undefined;
    return true;
  };
  /** a member of entries ends; false when it is one name too many */
  const endChart = (at: number): boolean => {
    if (chartKey === undefined) return true;
    names.add(chartKey);
    if (chartKey === chart) kept.push(`${buf.toString('utf8', chartKeySpan[0], chartKeySpan[1])}:${valueText(buf, chartAt, at)}`);
    chartKey = undefined;
    return names.size <= scan.maxNames;
  };
  const malformed = (): IndexSlice => whole('the JSON is not well formed');
  for (let i = start; i < buf.length; i++) {
    const c = buf[i]!;
    if (STRUCTURAL[c] === 0) {
      if (isJsonSpace(c)) inScalar = false;
      else if (!inScalar) {
        // a number or literal starts: only where a value goes, and one per value
        if (expect !== VALUE && expect !== VALUE_OR_CLOSE) return malformed();
        inScalar = true;
        expect = AFTER_VALUE;
      }
      continue;
    }
    inScalar = false;
    if ((++steps & 0x3fff) === 0) await pace.tick();
    const depth = kinds.length;
    switch (c) {
      case QUOTE: {
        const close = stringEnd(buf, i);
        if (close === -1) return whole('a JSON string is not closed');
        if (expect === KEY || expect === KEY_OR_CLOSE) {
          keyStart = i;
          keyEnd = close + 1;
          expect = AFTER_KEY;
        } else if (expect === VALUE || expect === VALUE_OR_CLOSE) expect = AFTER_VALUE;
        else return malformed();
        i = close;
        break;
      }
      case COLON:
        if (expect !== AFTER_KEY) return malformed();
        expect = VALUE;
        // only the keys of the root object and of entries are decoded
        if (depth === 1 || (depth === 2 && inEntries)) {
          const key = decodeKey(buf, keyStart, keyEnd);
          if (key === undefined) return whole('a JSON key does not parse');
          if (depth === 1) {
            member = key;
            memberAt = i + 1;
            memberContainer = false;
            if (key === 'entries') entries = undefined;
          } else {
            chartKey = key;
            chartKeySpan = [keyStart, keyEnd];
            chartAt = i + 1;
          }
        }
        break;
      case COMMA:
        if (expect !== AFTER_VALUE) return malformed();
        if (depth === 1 && !endMember(i)) return malformed();
        if (depth === 2 && inEntries && !endChart(i)) return tooManyNames(scan);
        expect = kinds[kinds.length - 1] === OBJECT ? KEY : VALUE;
        break;
      case OPEN_BRACE:
      case OPEN_BRACKET:
        if (expect !== VALUE && expect !== VALUE_OR_CLOSE) return malformed();
        if (depth === 1) memberContainer = true;
        if (depth === 1 && member === 'entries' && c === OPEN_BRACE) {
          inEntries = true;
          entries = 'object';
          names = new Set();
          kept = [];
        }
        kinds.push(c === OPEN_BRACE ? OBJECT : ARRAY);
        expect = c === OPEN_BRACE ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
        break;
      default: {
        // a closer
        const kind = c === CLOSE_BRACE ? OBJECT : ARRAY;
        if (kinds[kinds.length - 1] !== kind) return whole('JSON brackets do not match');
        if (expect !== AFTER_VALUE && expect !== (kind === OBJECT ? KEY_OR_CLOSE : VALUE_OR_CLOSE)) return malformed();
        kinds.pop();
        expect = AFTER_VALUE;
        if (depth === 2 && inEntries) {
          if (!endChart(i)) return tooManyNames(scan);
          inEntries = false;
        } else if (depth === 1) {
          if (member !== undefined && !endMember(i)) return malformed();
          end = i;
        }
      }
    }
    if (end !== -1) break;
  }
  if (end === -1) return whole('the JSON object is not closed');
  for (let i = end + 1; i < buf.length; i++) if (!isJsonSpace(buf[i]!)) return whole('more than one JSON value');
  const members = apiVersions.map((v) => `"apiVersion":${v}`);
  if (entries === 'object') members.push(`"entries":{${kept.join(',')}}`);
  else if (entries === 'null') members.push('"entries":null');
  else if (entries === 'other') members.push('"entries":[]');
  return { layout: 'json', text: `{${members.join(',')}}`, names: entries === 'object' ? [...names].sort() : [] };
}
