/**
 * go-yaml v2 scalar resolution (goyaml.v2/resolve.go): what a plain scalar's text and tag mean
 * (YAML 1.1 booleans, octal and `0x`/`0o`/`0b` integers, no sexagesimal, timestamps kept as
 * strings), and how sigs.k8s.io/yaml spells a float map key.
 *
 * Pure: text in, value out.
 */

export type Resolved =
  { kind: 'str'; value: string } | { kind: 'bool'; value: boolean } | { kind: 'null' } | { kind: 'int'; value: bigint } | { kind: 'float'; value: number };

const LONG_TAG_PREFIX = 'tag:yaml.org,2002:';

export function shortTag(tag: string | undefined): string {
  if (tag === undefined) return '';
  return tag.startsWith(LONG_TAG_PREFIX) ? `!!${tag.slice(LONG_TAG_PREFIX.length)}` : tag;
}

const BOOL_NULL: ReadonlyMap<string, Resolved> = new Map<string, Resolved>([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map((s): [string, Resolved] => [s, { kind: 'bool', value: true }]),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map((s): [string, Resolved] => [s, { kind: 'bool', value: false }]),
  ...['', '~', 'null', 'Null', 'NULL'].map((s): [string, Resolved] => [s, { kind: 'null' }]),
  ...['.nan', '.NaN', '.NAN'].map((s): [string, Resolved] => [s, { kind: 'float', value: Number.NaN }]),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map((s): [string, Resolved] => [s, { kind: 'float', value: Number.POSITIVE_INFINITY }]),
  ...['-.inf', '-.Inf', '-.INF'].map((s): [string, Resolved] => [s, { kind: 'float', value: Number.NEGATIVE_INFINITY }]),
]);

const RESOLVABLE_TAGS = new Set(['', '!!str', '!!bool', '!!int', '!!float', '!!null', '!!timestamp']);
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const TIMESTAMP = /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$/;

type Hint = 'S' | 'D' | 'M' | '.' | 'N' | '';
function hintOf(text: string): Hint {
  const c = text[0];
  if (c === undefined) return 'N';
  if (c === '+' || c === '-') return 'S';
  if (c >= '0' && c <= '9') return 'D';
  if ('yYnNtTfFoO~'.includes(c)) return 'M';
  if (c === '.') return '.';
  return '';
}

/**
 * An untagged plain scalar that resolveYamlScalar reads as its own text, known from its first
 * character alone (no number, boolean, null or float can start with it): most keys and values
 * of a manifest, read without building a Resolved
 */
export function plainIsText(text: string): boolean {
  return hintOf(text) === '';
}

/**
 * go-yaml v2's resolve(tag, in) for a scalar's text and its short tag ("" when untagged, "!!int",
 * ...). Non-standard tags leave the text a string, as go-yaml does when decoding into
 * interface{}. Throws when an explicit tag does not fit the text ("cannot decode ...").
 */
export function resolveYamlScalar(text: string, tag = ''): Resolved {
  if (!RESOLVABLE_TAGS.has(tag)) return { kind: 'str', value: text };
  const resolved = resolveUntyped(text, tag);
  if (tag === '' || tag === '!!str') return resolved;
  const rtag = `!!${resolved.kind}`;
  if (tag === rtag) return resolved;
  if (tag === '!!float' && resolved.kind === 'int') return { kind: 'float', value: Number(resolved.value) };
  // go-yaml keeps timestamps as strings when decoding into interface{}
  if (tag === '!!timestamp' && resolved.kind === 'str' && TIMESTAMP.test(text)) return resolved;
  throw new Error(`cannot decode ${rtag} \`${text}\` as a ${tag}`);
}

function resolveUntyped(text: string, tag: string): Resolved {
  const hint = hintOf(text);
  if (hint === '' || tag === '!!str') return { kind: 'str', value: text };
  const known = BOOL_NULL.get(text);
  if (known) return known;
  switch (hint) {
    case '.':
      if (/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text)) return { kind: 'float', value: Number(text) };
      break;
    case 'D':
    case 'S': {
      const plain = text.replaceAll('_', '');
      const int = parseGoInt64(plain);
      if (int !== undefined) return { kind: 'int', value: int };
      if (YAML_STYLE_FLOAT.test(plain)) {
        const f = Number(plain);
        // strconv.ParseFloat fails on overflow, and go-yaml then keeps the text as a string
        if (Number.isFinite(f)) return { kind: 'float', value: f };
      }
      break;
    }
    default:
      break;
  }
  return { kind: 'str', value: text };
}

/**
 * strconv.ParseInt(s, 0, 64), falling back to ParseUint as go-yaml v2 does: parseGoIntBase0, but
 * undefined outside int64 (signed) and uint64 (unsigned: ParseUint takes no sign), where go-yaml
 * tries a float and then keeps the text as a string (`0xFFFFFFFFFFFFFFFFFF` is a string to kubectl).
 */
function parseGoInt64(s: string): bigint | undefined {
  const v = parseGoIntBase0(s);
  if (v === undefined) return undefined;
  const unsigned = !/^[+-]/.test(s);
  if (v < -(2n ** 63n) || v > (unsigned ? 2n ** 64n - 1n : 2n ** 63n - 1n)) return undefined;
  return v;
}

/**
 * The digits of strconv.ParseInt(s, 0, 64) without its range: an optional sign, then 0x/0o/0b
 * prefixes, a leading 0 for octal, else decimal.
 */
export function parseGoIntBase0(s: string): bigint | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return undefined;
  const sign = m[1] === '-' ? -1n : 1n;
  const body = m[2] as string;
  let magnitude: bigint;
  if (/^0[xXoObB]/.test(body)) {
    magnitude = BigInt(`0${body[1]?.toLowerCase()}${body.slice(2)}`);
  } else if (body.length > 1 && body.startsWith('0')) {
    magnitude = BigInt(`0o${body.slice(1)}`);
  } else {
    magnitude = BigInt(body);
  }
  return sign * magnitude;
}

/**
 * strconv.FormatFloat(f, 'g', -1, 32): how sigs.k8s.io/yaml spells a float map key. Only used
 * for keys, which are rare, but `1.5: x` should become "1.5" exactly as kubectl makes it.
 */
export function formatGoFloat32(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (value === Number.POSITIVE_INFINITY) return '.inf';
  if (value === Number.NEGATIVE_INFINITY) return '-.inf';
  const f = Math.fround(value);
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const neg = f < 0;
  const abs = Math.abs(f);
  let digits = '';
  let exp = 0;
  for (let p = 1; p <= 9; p++) {
    const e = abs.toExponential(p - 1);
    if (Math.fround(Number(e)) === abs || p === 9) {
      const [mant = '', ex = '0'] = e.split('e');
      digits = mant.replace('.', '').replace(/0+$/, '') || '0';
      exp = Number(ex);
      break;
    }
  }
  const nd = digits.length;
  const dp = exp + 1;
  let out: string;
  if (exp < -4 || exp >= 6) {
    const mant = nd > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const es = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : `${Math.abs(exp)}`;
    out = `${mant}e${exp < 0 ? '-' : '+'}${es}`;
  } else if (dp <= 0) {
    out = `0.${'0'.repeat(-dp)}${digits}`;
  } else if (dp >= nd) {
    out = digits + '0'.repeat(dp - nd);
  } else {
    out = `${digits.slice(0, dp)}.${digits.slice(dp)}`;
  }
  return neg ? `-${out}` : out;
}
