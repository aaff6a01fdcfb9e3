/**
 * The values layers handed to helm, in the order helm merges them (`--values` files, each
 * deep-merged over the ones before, maps key by key, anything else replaced): the chart's own
 * values.yaml (helm reads it), `config.helm.valuesFiles` from the chart's tree, then
 * `config.helm.valuesFrom` in order, then `config.helm.values` — Flux's order (its HelmChart
 * valuesFiles are the chart's values, its HelmRelease merges valuesFrom in order and `values`
 * last). Every layer is read with Hoist's YAML reader (kubectl's rules, which are sigs.k8s.io/yaml's
 * that helm reads values with) and given to helm as JSON, so a bad layer is an error naming it.
 *
 * valuesFrom text may come from a Secret: errors about it name the reference and a line, never
 * the parser's message or any of the text, and its warnings are dropped.
 *
 * Pure but for reading the tree through the bundle reader (containment rule, size caps).
 */
import type { ContentTree } from '../../util/content-tree.ts';
import { redact, redactionList } from '../../util/redact.ts';
import type { HoistError } from '../../util/errors.ts';
import { isHoistError } from '../../util/errors.ts';
import type { ValuesFromText } from '../processor.ts';
import type { BundleDecryptor } from '../sops/decryptor.ts';
import { yamlBudget, type YamlBudget } from '../yaml/budget.ts';
import { parseYamlStream } from '../yaml/stream.ts';
import { isJsonObject, setKey, type JsonObject, type JsonValue } from '../yaml/values.ts';
import { relativePathProblem } from '../tree-paths.ts';
import { joinRel, type ChartInfo } from './chart.ts';
import { ProcessCode, processError } from '../errors.ts';

export interface ValuesLayer {
  /** what the layer is, for messages: "valuesFiles[0] values-prod.yaml", "secret ns/n key values.yaml" */
  from: string;
  values: JsonObject;
  /** read from a Secret */
  secret?: boolean;
}

/** the scalar texts of the Secret layers, longest first, to blank out of anything helm says */
export function secretStrings(layers: readonly ValuesLayer[]): string[] {
  const found: string[] = [];
  const walk = (v: JsonValue): void => {
    if (typeof v === 'string' || typeof v === 'number') found.push(String(v));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  for (const l of layers) if (l.secret) walk(l.values);
  return redactionList(found);
}

export { redact };

/** One YAML document holding a map (or nothing: {}), as helm requires of a values file. */
function valuesDocument(text: string, from: string, secret: boolean, budget: YamlBudget): { values: JsonObject; warnings: string[] } {
  let parsed;
  try {
    parsed = parseYamlStream(text, from, budget);
  } catch (e) {
    if (!secret || !isHoistError(e)) throw e;
    // the parser's message may quote the text: say where only
    const line = /:(\d+)$/.exec(e.subject ?? '')?.[1];
    throw processError(`${from} is not valid YAML${line ? ` (line ${line})` : ''}`, ProcessCode.InvalidConfig, from);
  }
  if (parsed.documents.length > 1)
    throw processError(`${from} holds ${parsed.documents.length} YAML documents; a values file holds one`, ProcessCode.InvalidConfig, from);
  const value = parsed.documents[0]?.value ?? {};
  if (!isJsonObject(value))
    throw processError(`${from} is not a map of values (it is ${Array.isArray(value) ? 'a list' : `a ${typeof value}`})`, ProcessCode.InvalidConfig, from);
  return { values: value, warnings: secret ? [] : parsed.warnings };
}

/** config.helm.valuesFiles read from the chart's directory, in order; a missing file is an error naming it */
export async function readValuesFiles(
  bundle: ContentTree,
  chart: Pick<ChartInfo, 'relDir'>,
  files: readonly string[],
  budget: YamlBudget = yamlBudget(),
  sops?: BundleDecryptor,
): Promise<{ layers: ValuesLayer[]; warnings: string[] }> {
  const layers: ValuesLayer[] = [];
  const warnings: string[] = [];
  const errors: HoistError[] = [];
  for (const [i, file] of files.entries()) {
    const from = `config.helm.valuesFiles[${i}] ${file}`;
    const problem = relativePathProblem(file);
    if (problem) {
      errors.push(processError(`${from} ${problem}`, ProcessCode.InvalidConfig, from));
      continue;
    }
    try {
      // through the bundle reader: inside the tree (links included), a regular file, under the caps
      const raw = await bundle.readText(joinRel(chart.relDir, file));
      // a SOPS-encrypted values file is decrypted in memory and treated as Secret values
      const text = sops ? await sops.manifestText(raw, joinRel(chart.relDir, file)) : raw;
      const secret = text !== raw;
      const doc = valuesDocument(text, joinRel(chart.relDir, file), secret, budget);
      layers.push({ from, values: doc.values, ...(secret ? { secret } : {}) });
      warnings.push(...doc.warnings);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
    }
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1)
    throw processError(`${errors.length} problems: ${errors.map((e) => e.message).join('; ')}`, ProcessCode.InvalidConfig, errors[0]!.subject);
  return { layers, warnings };
}

/** config.helm.valuesFrom as the reader gave them, each a layer */
export function valuesFromLayers(texts: readonly ValuesFromText[], budget: YamlBudget = yamlBudget()): ValuesLayer[] {
  return texts.map((t) => ({
    from: t.ref,
    secret: t.secret,
    values: t.targetPath === undefined ? valuesDocument(t.text, t.ref, true, budget).values : atPath(t.targetPath, setValue(t.text, t.ref), t.ref),
  }));
}

/**
 * The keys of a targetPath: dot-separated, `\.` a dot inside a key (as helm --set reads keys).
 * List indexes (`a[0]`) are refused: they would patch a list the layers before built, which
 * merging whole layers cannot express.
 */
export function targetPathKeys(path: string, from = 'targetPath'): string[] {
  const keys: string[] = [];
  let key = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === '\\' && path[i + 1] === '.') {
      key += '.';
      i++;
    } else if (c === '.') {
      keys.push(key);
      key = '';
    } else if (/[A-Za-z0-9_/-]/.test(c)) {
      key += c;
    } else {
      throw processError(
        `${from}: targetPath ${JSON.stringify(path)} has ${JSON.stringify(c)}; keys are letters, digits, '_', '-', '/' and '\\.' (list indexes are not supported)`,
        ProcessCode.InvalidConfig,
        from,
      );
    }
  }
  keys.push(key);
  if (keys.some((k) => k === '')) throw processError(`${from}: targetPath ${JSON.stringify(path)} has an empty key`, ProcessCode.InvalidConfig, from);
  return keys;
}

/**
 * The text as one value, typed as helm --set types it (strvals typedVal: true/false/null in any
 * case, 0, integers not starting with 0; anything else a string); text wrapped in quotes is the
 * string inside them, quotes trimmed as Flux does. Unlike --set, commas and backslashes are not
 * special: the whole text is the value.
 */
export function setValue(text: string, from = 'value'): JsonValue {
  if ((text.startsWith("'") && text.endsWith("'")) || (text.startsWith('"') && text.endsWith('"'))) return text.replace(/^['"]+|['"]+$/g, '');
  const lower = text.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (lower === 'null') return null;
  if (text === '0') return 0;
  if (/^[+-]?[0-9]+$/.test(text) && text[0] !== '0') {
    const n = Number(text);
    // Go's ParseInt range; beyond ±2^53 JSON numbers here would round: refused, not changed
    if (!Number.isSafeInteger(n)) {
      if (BigInt(text) > 2n ** 63n - 1n || BigInt(text) < -(2n ** 63n)) return text;
      throw processError(
        `${from}: the integer value is beyond ±2^53, which Hoist cannot pass on exactly; quote it to pass it as a string`,
        ProcessCode.InvalidConfig,
        from,
      );
    }
    return n;
  }
  return text;
}

/** {a: {b: value}} for path "a.b" */
function atPath(path: string, value: JsonValue, from: string): JsonObject {
  const keys = targetPathKeys(path, from);
  let out: JsonValue = value;
  for (const k of keys.reverse()) {
    const o: JsonObject = {};
    setKey(o, k, out);
    out = o;
  }
  return out as JsonObject;
}
