/**
 * From parsed documents to Kubernetes objects: List flattening, the minimum shape every object
 * must have, object identity, and duplicate detection. Shared by the plain and registry-v1
 * processors. Pure.
 */
import type { KubeObject } from '../kube/types.ts';
import type { HoistError } from '../util/errors.ts';
import { processError } from './errors.ts';
import { yamlBudget, type YamlBudget } from './yaml/budget.ts';
import { parseManifestStream, prescanManifest, type ParseOptions } from './yaml/stream.ts';
import { isJsonObject } from './yaml/values.ts';
import type { JsonObject, ParsedDocument } from './yaml/values.ts';
import { ProcessCode } from './errors.ts';

/** An object together with where it came from, for messages that name files. */
export interface SourcedObject {
  object: KubeObject;
  /** path relative to the content tree */
  file: string;
  /** 1-based; absent for generated objects */
  line?: number;
}

function where(s: SourcedObject): string {
  return s.line === undefined ? s.file : `${s.file}:${s.line}`;
}

export interface ManifestReadResult {
  objects: SourcedObject[];
  warnings: string[];
  /** problems with individual documents; the caller decides how to report them */
  errors: HoistError[];
}

/**
 * Parses one manifest file's text into objects. A syntax error fails the whole file (thrown);
 * a document that is not a valid object is collected in `errors` so every bad document of the
 * bundle can be reported at once. `budget` is the bundle's YAML node budget (yaml/budget.ts),
 * shared by every file of one render; a fresh one when absent.
 */
export function readManifestText(text: string, file: string, budget?: YamlBudget, opts: ParseOptions = {}): ManifestReadResult {
  const { documents, warnings } = parseManifestStream(text, file, budget, opts);
  const objects: SourcedObject[] = [];
  const errors: HoistError[] = [];
  for (const doc of documents) collectObjects(doc, file, objects, errors);
  return { objects, warnings, errors };
}

/**
 * readManifestText for the processors: a large stream's budget check (the lexer pass) gives the
 * event loop back every few milliseconds, so a hostile manifest does not hold the other
 * BundleDeployments' reconciles while it is refused.
 */
export async function readManifest(text: string, file: string, budget: YamlBudget = yamlBudget(), signal?: AbortSignal): Promise<ManifestReadResult> {
  await prescanManifest(text, file, budget, signal);
  return readManifestText(text, file, budget, { prescanned: true });
}

function collectObjects(doc: ParsedDocument, file: string, out: SourcedObject[], errors: HoistError[]): void {
  const subject = `${file}:${doc.line}`;
  const value = doc.value;
  if (!isJsonObject(value)) {
    errors.push(processError(`document is not an object (found ${describeJsonType(value)})`, ProcessCode.InvalidObject, subject));
    return;
  }
  flatten(value, subject, file, doc.line, out, errors, 0);
}

function describeJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'string' ? 'a string' : `a ${typeof v}`;
}

/**
 * kubectl flattens List kinds (`v1 List`, `DeploymentList`, ...) into their items, recursively.
 * We flatten an object whose kind ends in "List" and whose `items` is an array.
 */
function flatten(value: JsonObject, subject: string, file: string, line: number, out: SourcedObject[], errors: HoistError[], depth: number): void {
  const kind = value['kind'];
  const items = value['items'];
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items)) {
    if (depth > 8) {
      errors.push(processError('lists nested too deeply', ProcessCode.InvalidObject, subject));
      return;
    }
    items.forEach((item, i) => {
      if (!isJsonObject(item)) {
        errors.push(processError(`${kind} item ${i} is not an object`, ProcessCode.InvalidObject, subject));
        return;
      }
      flatten(item, subject, file, line, out, errors, depth + 1);
    });
    return;
  }
  const problem = objectShapeProblem(value);
  if (problem) {
    errors.push(processError(problem, ProcessCode.InvalidObject, subject));
    return;
  }
  out.push({ object: value as unknown as KubeObject, file, line });
}

/** Why a value is not an applicable object, or undefined when it is one. */
export function objectShapeProblem(value: JsonObject): string | undefined {
  const apiVersion = value['apiVersion'];
  const kind = value['kind'];
  const metadata = value['metadata'];
  const label = typeof kind === 'string' && kind !== '' ? `${kind} ` : '';
  const name = isJsonObject(metadata) && typeof metadata['name'] === 'string' ? metadata['name'] : '';
  const what = `${label}${name}`.trim() || 'object';
  if (typeof apiVersion !== 'string' || apiVersion === '') return `${what}: missing apiVersion`;
  if (typeof kind !== 'string' || kind === '') return `${what}: missing kind`;
  if (!isJsonObject(metadata)) return `${what}: missing metadata`;
  if (typeof metadata['name'] !== 'string' || metadata['name'] === '') {
    return `${apiVersion} ${kind}: missing metadata.name${typeof metadata['generateName'] === 'string' ? ' (generateName cannot be applied declaratively)' : ''}`;
  }
  if (metadata['namespace'] !== undefined && metadata['namespace'] !== null && typeof metadata['namespace'] !== 'string') {
    return `${apiVersion} ${kind} ${metadata['name']}: metadata.namespace must be a string`;
  }
  return undefined;
}

/** "apps/v1" → "apps", "v1" → "" (the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/**
 * The identity of an object: group, kind, namespace and name. The version is not part of it
 * (apps/v1 and apps/v1beta2 Deployments of one name are the same object). A missing namespace
 * counts as `defaultNamespace`, since the applier will put namespaced objects there.
 */
export function objectIdentity(obj: KubeObject, defaultNamespace = ''): string {
  const ns = obj.metadata.namespace || defaultNamespace;
  return `${groupOf(obj.apiVersion)}/${obj.kind}/${ns}/${obj.metadata.name}`;
}

/** Human form of an object's identity for messages: "apps/Deployment ns/name". */
function describeIdentity(obj: KubeObject, defaultNamespace = ''): string {
  const group = groupOf(obj.apiVersion);
  const ns = obj.metadata.namespace || defaultNamespace;
  return `${group ? `${group}/` : ''}${obj.kind} ${ns ? `${ns}/` : ''}${obj.metadata.name}`;
}

/** One error per object that appears more than once, naming both places. */
export function duplicateErrors(objects: SourcedObject[], defaultNamespace = ''): HoistError[] {
  const first = new Map<string, SourcedObject>();
  const errors: HoistError[] = [];
  for (const s of objects) {
    const id = objectIdentity(s.object, defaultNamespace);
    const prev = first.get(id);
    if (prev) {
      errors.push(
        processError(
          `duplicate object ${describeIdentity(s.object, defaultNamespace)}: defined in ${where(prev)} and ${where(s)}`,
          ProcessCode.DuplicateObject,
          where(s),
        ),
      );
    } else {
      first.set(id, s);
    }
  }
  return errors;
}
