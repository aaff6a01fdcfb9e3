/**
 * Inputs for the comparisons with Flux's own code: seeded pseudo-random YAML values, strings and
 * envsubst templates built from the characters and words that steer go-yaml's emitter (indicators,
 * YAML 1.1 booleans and numbers, timestamps, line breaks, long lines, unicode outside the BMP) and
 * envsubst's scanner (`$`, braces, operators, escapes). The same seed gives the same corpus.
 */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

// not '<<': the reference builds its resource with kustomize's FromMap, whose YAML step writes a
// key "<<" unquoted and then merges it, which a resource read from a manifest does not do
export const WORDS = [
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'n',
  'null',
  '~',
  'true',
  'False',
  '1.5',
  '.5',
  '-.5',
  '+1',
  '-0',
  '08',
  '0755',
  '0o17',
  '0x1F',
  '0b101',
  '-0b11',
  '1_000',
  '1e3',
  '1e400',
  '.inf',
  '-.Inf',
  '.nan',
  '1:20',
  '-1:30:00.5',
  '2001-12-14',
  '2001-2-3',
  '2001-02-30',
  '2000-02-29',
  '1999-02-29',
  '2001-12-14t21:59:43.10-05:00',
  '2001-12-14 21:59:43.10',
  '2001-12-14T21:59:43Z',
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551615',
  '18446744073709551616',
  '0xFFFFFFFFFFFFFFFFFF',
  '---',
  '...',
  '--- x',
  '- x',
  '-x',
  '? x',
  '?x',
  ': x',
  ':x',
  'a: b',
  'a:b',
  'a #b',
  'a#b',
  '#x',
  '&a',
  '*a',
  '!t',
  '|x',
  '>x',
  "'q'",
  '"q"',
  '%x',
  '@x',
  '`x',
  ',x',
  'x,y',
  '[x]',
  '{x}',
  'ok',
  'word',
  'hello world',
  '${var}',
  '$${var}',
  '$var',
  '${a:=b c}',
  '${x:-y}',
  '${#v}',
  '${v//a/b}',
  'é',
  'ß',
  'İ',
  '😀',
  '\u00a0',
  '\u0085',
  '\u2028',
  '\ufeff',
  '\t',
  '\r',
  '',
  ' ',
  '  ',
];

const CHARS = [...'abcXYZ019 _-.:#?[]{},&*!|>\'"%@`\n\t$/\\^+=~é😀', '\u2028', '\u0085', '\r', '\u00a0'];

export function randomString(r: () => number): string {
  const kind = r();
  if (kind < 0.35) return pick(r, WORDS);
  if (kind < 0.55) {
    // a long line folded somewhere: words and single or double spaces, maybe a ${...} near column 80
    const parts: string[] = [];
    const n = 10 + Math.floor(r() * 40);
    for (let i = 0; i < n; i++)
      parts.push(r() < 0.1 ? pick(r, ['${var}', '${a:=b c}', "it's", '"q"', 'x:', '#h']) : pick(r, ['word', 'a', 'longerword', 'é', '😀', '1']));
    return parts.join(r() < 0.15 ? '  ' : ' ') + (r() < 0.1 ? ' ' : '');
  }
  if (kind < 0.7) {
    const lines = Array.from({ length: 1 + Math.floor(r() * 4) }, () => randomShort(r));
    return lines.join('\n') + pick(r, ['', '\n', '\n\n', ' ']);
  }
  return randomShort(r);
}

function randomShort(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 12);
  for (let i = 0; i < n; i++) s += r() < 0.3 ? pick(r, WORDS) : pick(r, CHARS);
  return s;
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function randomValue(r: () => number, depth = 0): Json {
  const k = r();
  if (depth < 4 && k < 0.25) {
    const n = Math.floor(r() * 5);
    const obj: { [k: string]: Json } = {};
    for (let i = 0; i < n; i++) obj[randomKey(r)] = randomValue(r, depth + 1);
    return obj;
  }
  if (depth < 4 && k < 0.4) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  if (k < 0.45) return pick(r, [null, true, false]);
  if (k < 0.55) return pick(r, [0, 1, -1, 3, 10, 1.5, -2.25, 1e-7, 1e21, 123456789, 0.1]);
  return randomString(r);
}

/**
 * Keys, without digit runs longer than int64: go-yaml's key order compares digit runs as int64s,
 * which wrap around, so for such keys the order is not consistent and Go's result depends on its
 * map iteration order (random).
 */
export function randomKey(r: () => number): string {
  for (;;) {
    const k = anyKey(r);
    if (!/[0-9]{19}/.test(k)) return k;
  }
}

function anyKey(r: () => number): string {
  const k = r();
  if (k < 0.3) return pick(r, ['a', 'b', 'a1', 'a01', 'a10', 'a2', 'b0', '1', '10', '2', 'x_y', 'apiVersion', 'kind', 'A', 'é', 'z9z']);
  if (k < 0.35) return 'k'.repeat(120 + Math.floor(r() * 20));
  if (k < 0.38) return `multi\nline${randomShort(r)}`;
  return randomString(r).slice(0, 40);
}

/** envsubst templates: text with `${…}` expressions, well formed or not */
export function randomTemplate(r: () => number, depth = 0): string {
  const n = 1 + Math.floor(r() * 5);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.35) s += pick(r, ['text ', 'a', ' ', '$', '$$', '$$$', '}', '{', '\\', '\\\\', '\\/', 'é', '😀', '\n', ':', '$x', '$${', '${', '$ {']);
    else s += expression(r, depth);
  }
  return s;
}

const NAMES = ['a', 'b', 'var', 'missing', 'empty', 'path', 'é', 'a_1', '_', '1', ''];
const OPS = [
  '',
  ':=',
  ':-',
  ':?',
  ':+',
  '=',
  '-',
  '?',
  '+',
  ',',
  ',,',
  '^',
  '^^',
  ':',
  '#',
  '##',
  '%',
  '%%',
  '/',
  '//',
  '/#',
  '/%',
  ':1',
  ':1:2',
  ':-2:1',
  ':x',
  '::',
];

function expression(r: () => number, depth: number): string {
  if (r() < 0.1) return `\${#${pick(r, NAMES)}}`;
  const op = pick(r, OPS);
  let arg = '';
  if (op !== '' && !/^[,^]+$/.test(op)) {
    const parts = Array.from({ length: Math.floor(r() * 3) }, () =>
      depth < 2 && r() < 0.3
        ? expression(r, depth + 1)
        : pick(r, ['x', 'a b', '*', '*.', '?', '[a-c]', '[^a]', '\\/', '/', '\\\\', ':', '}', '$', '$$', 'é', '1', '-1', '0']),
    );
    arg = parts.join(op.startsWith('/') && r() < 0.5 ? '/' : '');
  }
  const close = r() < 0.9 ? '}' : '';
  return `\${${pick(r, NAMES)}${op}${arg}${close}`;
}

export const VALUES: Record<string, string> = {
  a: 'alpha',
  b: 'x:y',
  var: 'value with space',
  empty: '',
  path: '/usr/local/bin.txt',
  é: 'accent',
  a_1: 'ABCdef',
  _: '😀é',
};

/** a template that parses (mostly): names with values, operators that take them, braces closed */
export function wellFormedTemplate(r: () => number): string {
  const parts: string[] = [];
  const n = 1 + Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.3) parts.push(pick(r, ['text ', 'a', ' ', '$x', '$$', '$${kept}', '- ', ': ', '#', '"', "'", 'é', '😀', '\\', ', ']));
    else {
      const name = pick(r, [...Object.keys(SUBSTITUTION_VALUES), 'missing']);
      const op = pick(r, [
        '',
        '',
        '',
        ':=d',
        ':-d e',
        ':=${a}',
        ',,',
        '^^',
        '^',
        ':1',
        ':1:3',
        ':-3:2',
        '#*a',
        '##*/',
        '%.*',
        '%%.*',
        '/a/b',
        '//a/${b}',
        '/#a/b',
        '/%t/T',
        ':?msg',
      ]);
      parts.push(op === '' && r() < 0.1 ? `\${#${name}}` : `\${${name}${op}}`);
    }
  }
  return parts.join('');
}

/** variables for whole-object substitution: values that keep the YAML, and values that change or break it */
export const SUBSTITUTION_VALUES: Record<string, string> = {
  a: 'alpha',
  b: 'x:y',
  var: 'value with space',
  empty: '',
  path: '/usr/local/bin.txt',
  n: '3',
  t: 'true',
  q: '"',
  colon: 'a: b',
  hash: 'x #y',
  list: '[1, 2]',
  map: '{k: v}',
  dash: '- item',
  star: '*ref',
  u: 'é😀',
};
