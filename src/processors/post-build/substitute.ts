/**
 * `spec.postBuild`: Flux kustomize-controller's post-build variable substitution
 * (github.com/fluxcd/pkg/kustomize SubstituteVariables, v1.35.4 as kustomize-controller v1.9.4
 * ships it), applied to every object a plain or kustomize render produced, before the content
 * digest:
 *
 * 1. The variables: each `substituteFrom` entry in order (a later one overrides an earlier one),
 *    then `substitute`, which overrides them all; newlines are removed from every value.
 * 2. Nothing happens unless there is at least one variable, or `substituteStrategy: Always`.
 * 3. An object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is left
 *    as it is.
 * 4. Every other object is written as YAML the way kustomize's Resource.AsYAML writes it
 *    (go-yaml v2, ../yaml/emit.ts), envsubst runs over that text (envsubst.ts, strict: a `${var}`
 *    without a value and without a default fails, as kustomize-controller's default
 *    StrictPostBuildSubstitutions), and the text is read back as kubectl reads YAML. So a value
 *    lands as YAML text: `replicas: ${n}` with n=3 becomes the number 3, `enabled: ${flag}` with
 *    "true" the boolean true (Flux's docs: quote it as `"${flag}"`, or `${quote}${flag}${quote}`).
 *    Variable names must match `^[_[:alpha:]][_[:alpha:][:digit:]]*$`.
 *
 * Bounded: every object's text after substitution is at most MAX_OBJECT_BYTES, all of a render's
 * together at most MAX_TOTAL_BYTES (intermediate values included), pattern matching at most
 * MAX_STEPS comparisons, nesting MAX_NESTING deep; the event loop is given back between objects.
 * Errors never show a variable's value or the substituted text (a value may come from a Secret):
 * they name the object, the field, the variable and envsubst's problem.
 */
import type { KubeObject } from '../../kube/types.ts';
import { describeObject } from '../../util/describe-object.ts';
import type { HoistError } from '../../util/errors.ts';
import { combineProcessErrors, processError, ProcessCode } from '../errors.ts';
import { duplicateErrors, objectShapeProblem } from '../manifest.ts';
import { emitGoYamlBytes, kustomizeYamlBytes, needsRoundTrip, YamlConversionError, type EmitMark, type Emitted } from '../yaml/emit.ts';
import { parseYamlStream } from '../yaml/stream.ts';
import { isJsonObject, type JsonValue } from '../yaml/values.ts';
import { EnvsubstError, evalTemplate, parseTemplate, type EnvsubstBudget } from './envsubst.ts';
import { fromBytes, isValidUtf8, toBytes } from './go-text.ts';

export const SUBSTITUTE_KEY = 'kustomize.toolkit.fluxcd.io/substitute';
export const SUBSTITUTE_DISABLED = 'disabled';
/** kustomize-controller's varsubRegex; [[:alpha:]] and [[:digit:]] are ASCII in Go's regexp */
export const VARIABLE_NAME = /^[_A-Za-z][_A-Za-z0-9]*$/;
const VARIABLE_NAME_TEXT = '^[_[:alpha:]][_[:alpha:][:digit:]]*$';

export const MAX_OBJECT_BYTES = 16 * 1024 * 1024;
export const MAX_TOTAL_BYTES = 128 * 1024 * 1024;
export const MAX_STEPS = 50_000_000;

/** one source of variables, as read: inline `substitute` or a `substituteFrom` entry */
export interface VariableSource {
  /** names the source in messages: "substitute", "substituteFrom[0] configmap ns/vars" */
  from: string;
  /** name → value as a byte string (go-text.ts): a Secret's decoded bytes, a ConfigMap's UTF-8 */
  data: ReadonlyMap<string, string>;
}

export interface PostBuildVariables {
  /** name → value (byte string, newlines removed) */
  values: ReadonlyMap<string, string>;
  /** name → the source it was taken from (for messages) */
  origin: ReadonlyMap<string, string>;
}

/**
 * LoadVariables + the inline map: the sources in order, each overriding the ones before (the
 * caller puts `substituteFrom` first and `substitute` last), newlines removed from every value.
 */
export function mergeVariables(sources: readonly VariableSource[]): PostBuildVariables {
  const values = new Map<string, string>();
  const origin = new Map<string, string>();
  for (const src of sources) {
    for (const [name, value] of src.data) {
      values.set(name, value.replaceAll('\n', ''));
      origin.set(name, src.from);
    }
  }
  return { values, origin };
}

export interface PostBuildOptions {
  variables: PostBuildVariables;
  /** Flux's substituteStrategy: WithVariables (default) substitutes only when there is a variable */
  strategy?: 'WithVariables' | 'Always';
  limits?: Partial<{ objectBytes: number; totalBytes: number; steps: number }>;
  signal?: AbortSignal | undefined;
  /**
   * texts that must not appear in a message (values decrypted by SOPS, ProcessResult.sensitive): a
   * problem in a string holding one is reported without quoting that string
   */
  sensitive?: readonly string[] | undefined;
  /** the namespace namespaced objects without one are applied in (duplicates after substitution) */
  installNamespace?: string | undefined;
  /** how long to work before giving the event loop back (ms); tests set 0 */
  sliceMs?: number;
}

const STAGE = 'post-build substitution';

/**
 * The objects with their variables substituted, in the same order (objects that need nothing are
 * returned as they are). Throws a terminal HoistError of stage process (code variable-not-set,
 * invalid-variable-name, substitution-failed or substitution-budget) naming the object and, when
 * known, the field.
 */
export async function substituteObjects(objects: readonly KubeObject[], opts: PostBuildOptions): Promise<KubeObject[]> {
  const { values, origin } = opts.variables;
  const active = values.size > 0 || opts.strategy === 'Always';
  if (active && objects.some((o) => !disabled(o))) {
    for (const name of values.keys()) {
      if (!VARIABLE_NAME.test(name)) {
        throw processError(
          `${STAGE}: variable name ${JSON.stringify(name)} (${origin.get(name) ?? 'substitute'}) is invalid, it must match '${VARIABLE_NAME_TEXT}'`,
          ProcessCode.InvalidVariableName,
          origin.get(name),
        );
      }
    }
  }
  const vars = new Map<string, string>();
  for (const [k, v] of values) vars.set(toBytes(k), v);
  const budget = renderBudget(opts.limits);
  const out: KubeObject[] = [];
  const errors: HoistError[] = [];
  const sliceMs = opts.sliceMs ?? 20;
  let sliceStart = Date.now();
  for (const obj of objects) {
    if (Date.now() - sliceStart >= sliceMs) {
      await new Promise((r) => setImmediate(r));
      opts.signal?.throwIfAborted();
      sliceStart = Date.now();
    }
    try {
      // Flux writes every object as YAML first, disabled or not, with variables or without
      const convertible = needsRoundTrip(obj as unknown as JsonValue) ? converted(obj) : undefined;
      if (!active || disabled(obj)) out.push(obj);
      else out.push(substituteOne(obj, convertible, vars, budget, opts.limits?.objectBytes ?? MAX_OBJECT_BYTES, opts.sensitive ?? []));
    } catch (e) {
      if (!(e instanceof PostBuildProblem)) throw e;
      errors.push(processError(`${STAGE}: ${describeObject(obj)}: ${e.message}`, e.code, describeObject(obj)));
      // a budget spent is spent for every object after it too
      if (e.code === ProcessCode.SubstitutionBudget) break;
    }
  }
  const failed = combineProcessErrors(errors);
  if (failed) throw failed;
  if (!active) return out;
  const duplicates = duplicateErrors(
    out.map((object, i) => ({ object, file: `object ${i + 1} after ${STAGE}` })),
    opts.installNamespace,
  );
  const dup = combineProcessErrors(duplicates);
  if (dup) throw dup;
  return out;
}

/** kustomize's AsYAML of an object that needs more than the emitter (see kustomizeYamlBytes) */
function converted(obj: KubeObject): Emitted {
  try {
    return kustomizeYamlBytes(obj as unknown as JsonValue, { escapeLineSeparators: true });
  } catch (e) {
    if (!(e instanceof YamlConversionError)) throw e;
    throw new PostBuildProblem(`${e.path ? `${e.path}: ` : ''}${e.message}`, ProcessCode.SubstitutionFailed);
  }
}

/** labelled or annotated kustomize.toolkit.fluxcd.io/substitute: disabled */
export function disabled(obj: KubeObject): boolean {
  return obj.metadata.labels?.[SUBSTITUTE_KEY] === SUBSTITUTE_DISABLED || obj.metadata.annotations?.[SUBSTITUTE_KEY] === SUBSTITUTE_DISABLED;
}

class PostBuildProblem extends Error {
  constructor(
    message: string,
    readonly code: ProcessCode,
  ) {
    super(message);
  }
}

interface RenderBudget extends EnvsubstBudget {
  /** bytes produced for the object being substituted */
  objectBytes: number;
}

function renderBudget(limits: PostBuildOptions['limits']): RenderBudget {
  const totalLimit = limits?.totalBytes ?? MAX_TOTAL_BYTES;
  const stepLimit = limits?.steps ?? MAX_STEPS;
  let total = 0;
  let steps = 0;
  const tooLarge = (): never => {
    throw new PostBuildProblem(`the substituted text is over the limit of ${mib(totalLimit)} for a render`, ProcessCode.SubstitutionBudget);
  };
  const budget: RenderBudget = {
    objectBytes: 0,
    produce(bytes) {
      total += bytes;
      budget.objectBytes += bytes;
      if (total > totalLimit) tooLarge();
    },
    allow(bytes) {
      if (total + bytes > totalLimit) tooLarge();
    },
    spend(n) {
      steps += n;
      if (steps > stepLimit) {
        throw new PostBuildProblem(`pattern matching took over ${stepLimit} steps (a pattern of many '*' over a long value)`, ProcessCode.SubstitutionBudget);
      }
    },
  };
  return budget;
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB` : `${bytes} bytes`;
}

function withheld(e: EnvsubstError): string {
  if (e.kind === 'unset' || e.kind === 'required') return 'a variable is not set';
  return e.kind === 'parse' ? 'an expression does not parse' : 'an expression cannot be substituted';
}

/** the field a byte offset of the emitted text belongs to */
function fieldAt(marks: readonly EmitMark[], offset: number): string | undefined {
  const found = markAt(marks, offset);
  if (!found?.path) return undefined;
  return found.path.length > 200 ? `${found.path.slice(0, 200)}…` : found.path;
}

/** the scalar a byte offset of the emitted text is in (the last one starting at or before it) */
function markAt(marks: readonly EmitMark[], offset: number): EmitMark | undefined {
  let lo = 0;
  let hi = marks.length - 1;
  let found: EmitMark | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (marks[mid]!.offset <= offset) {
      found = marks[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function substituteOne(
  obj: KubeObject,
  convertible: Emitted | undefined,
  vars: ReadonlyMap<string, string>,
  budget: RenderBudget,
  objectLimit: number,
  sensitive: readonly string[],
): KubeObject {
  // no `$` in any key or string and nothing the JSON step changes: the text would read back as
  // the same object
  if (!convertible && !hasDollar(obj as unknown as JsonValue)) return obj;
  const { bytes, marks } = convertible ?? emitGoYamlBytes(obj as unknown as JsonValue, { escapeLineSeparators: true });
  const at = (offset: number): string => {
    const field = fieldAt(marks, offset);
    return field ? `${field}: ` : '';
  };
  let substituted: string;
  budget.objectBytes = 0;
  try {
    substituted = evalTemplate(parseTemplate(bytes), (name) => vars.get(name), {
      ...budget,
      produce(n) {
        budget.produce(n);
        if (budget.objectBytes > objectLimit) {
          throw new PostBuildProblem(`the substituted object is over the limit of ${mib(objectLimit)}`, ProcessCode.SubstitutionBudget);
        }
      },
    });
  } catch (e) {
    if (!(e instanceof EnvsubstError)) throw e;
    const code = e.kind === 'unset' || e.kind === 'required' ? ProcessCode.VariableNotSet : ProcessCode.SubstitutionFailed;
    // the expression's own text (variable, message, the text near it) is the manifest's, unless
    // the string it is in holds a decrypted value: then only where, not what
    const inString = markAt(marks, e.offset)?.text;
    if (inString !== undefined && sensitive.some((s) => s !== '' && inString.includes(s))) {
      throw new PostBuildProblem(`${at(e.offset)}${withheld(e)} (its text is not shown: it holds a decrypted value)`, code);
    }
    const what = e.kind === 'parse' ? `${e.message} near ${snippet(bytes, e.offset)}` : e.message;
    throw new PostBuildProblem(`${at(e.offset)}${what}`, code);
  }
  if (!isValidUtf8(substituted)) throw new PostBuildProblem('a substituted value is not UTF-8 text', ProcessCode.SubstitutionFailed);
  return readBack(fromBytes(substituted), bytes, marks);
}

/** the original text (never substituted text) around offset, on its line, at most 40 characters */
function snippet(bytes: string, offset: number): string {
  const at = Math.min(offset, bytes.length);
  const lineStart = bytes.lastIndexOf('\n', at - 1) + 1;
  const lineEnd = bytes.indexOf('\n', at);
  const start = Math.max(lineStart, at - 20);
  const text = fromBytes(bytes.slice(start, Math.min(lineEnd < 0 ? bytes.length : lineEnd, start + 60))).trimStart();
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** the substituted text read back as kubectl reads YAML (sigs.k8s.io/yaml YAMLToJSON) */
function readBack(text: string, original: string, marks: readonly EmitMark[]): KubeObject {
  let value: JsonValue;
  try {
    const { documents } = parseYamlStream(text, 'substituted');
    if (documents.length !== 1) throw new PostBuildProblem('the substituted text is not one YAML document', ProcessCode.SubstitutionFailed);
    value = documents[0]!.value;
  } catch (e) {
    if (e instanceof PostBuildProblem) throw e;
    // the parser's message may quote the text, and the text may hold a Secret's value: say where, not what
    const line = /:(\d+)$/.exec((e as HoistError).subject ?? '')?.[1];
    const field = line ? fieldOfLine(original, marks, text, Number(line)) : undefined;
    throw new PostBuildProblem(`the substituted object is not valid YAML${field ? ` at ${field}` : ''}`, ProcessCode.SubstitutionFailed);
  }
  if (!isJsonObject(value)) throw new PostBuildProblem('the substituted text is not an object', ProcessCode.SubstitutionFailed);
  const problem = objectShapeProblem(value);
  if (problem) throw new PostBuildProblem(`after substitution, ${problem}`, ProcessCode.SubstitutionFailed);
  return value as unknown as KubeObject;
}

/**
 * The field on a line of the substituted text: substitution keeps the lines (values have no
 * newlines), so line N of the result is line N of the emitted text, unless a default spanning
 * lines was used; then the field is only a guess and is left out.
 */
function fieldOfLine(original: string, marks: readonly EmitMark[], substituted: string, line: number): string | undefined {
  const lines = (s: string): number => s.split('\n').length;
  if (lines(original) !== lines(substituted)) return undefined;
  let offset = 0;
  for (let n = 1; n < line; n++) {
    const next = original.indexOf('\n', offset);
    if (next < 0) return undefined;
    offset = next + 1;
  }
  const end = original.indexOf('\n', offset);
  return fieldAt(marks, end < 0 ? original.length : end - 1);
}

function hasDollar(v: JsonValue): boolean {
  if (typeof v === 'string') return v.includes('$');
  if (Array.isArray(v)) return v.some(hasDollar);
  if (v !== null && typeof v === 'object') {
    for (const k of Object.keys(v)) if (k.includes('$') || hasDollar(v[k]!)) return true;
  }
  return false;
}
