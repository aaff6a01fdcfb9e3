/**
 * What the logger censors in a line's fields, as a second line of defence (code never logs secret
 * values on purpose): a field named like a credential, at the top level of the line or one level
 * down (`{ request: { token } }`), and `headers.authorization` one level down. The same fields
 * pino's `redact` paths `K`, `*.K` and `*.headers.authorization` censor, without the per-line cost
 * of its wildcard redactor (which clones every field and parses every path on every line): a line
 * that holds none of them is handed to pino as it came, and one that does is copied only where a
 * value is replaced, so the caller's objects are never changed.
 */

/** field names whose value is never written */
export const CENSORED_FIELDS: ReadonlySet<string> = new Set([
  'authorization',
  'password',
  'token',
  'credentials',
  'data',
  '.dockerconfigjson',
  'dockerconfigjson',
]);

export const CENSOR = '[redacted]';

type Fields = Record<string, unknown>;

/** a copy of `obj` with the same prototype and own properties (an Error keeps message and stack) */
function copyOf<T extends object>(obj: T): T {
  if (Array.isArray(obj)) return [...obj] as T;
  const proto = Object.getPrototypeOf(obj) as object | null;
  if (proto === Object.prototype || proto === null) return { ...obj };
  const copy = Object.defineProperties(Object.create(proto) as T, Object.getOwnPropertyDescriptors(obj));
  // V8's stack is an accessor that answers only for the error it was captured on
  if (obj instanceof Error) Object.defineProperty(copy, 'stack', { value: obj.stack, writable: true, configurable: true });
  return copy;
}

function isObject(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null;
}

/** `value` with its own credential-named fields (and headers.authorization) censored: itself when it has none */
function censorNested(value: Fields): Fields {
  let out: Fields | undefined;
  for (const k of CENSORED_FIELDS) {
    if (Object.hasOwn(value, k) && value[k] !== undefined) (out ??= copyOf(value))[k] = CENSOR;
  }
  const headers = value['headers'];
  if (isObject(headers) && !Array.isArray(headers) && Object.hasOwn(headers, 'authorization') && headers['authorization'] !== undefined) {
    const h = copyOf(headers);
    h['authorization'] = CENSOR;
    (out ??= copyOf(value))['headers'] = h;
  }
  return out ?? value;
}

/** the line's fields as they may be written (pino's formatters.log and formatters.bindings) */
export function redactLogFields(fields: Fields): Fields {
  let out: Fields | undefined;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key)) continue;
    const v = fields[key];
    if (v === undefined) continue;
    let r = v;
    if (CENSORED_FIELDS.has(key)) r = CENSOR;
    else if (isObject(v) && !Array.isArray(v)) r = censorNested(v);
    if (r !== v) (out ??= { ...fields })[key] = r;
  }
  return out ?? fields;
}
