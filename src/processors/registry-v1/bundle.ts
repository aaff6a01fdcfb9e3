/**
 * Loads a registry+v1 bundle from a content tree, as OLM v1's bundle source does
 * (rukpak/bundle/source FromFS): `metadata/annotations.yaml` (required: the package name),
 * optional `metadata/properties.yaml` (merged into the CSV's `olm.properties` annotation), and
 * every file in `manifests/` (no subdirectories) split into the one ClusterServiceVersion, the
 * CustomResourceDefinitions and the other objects. Reads the tree only, through
 * ../bundle-files.ts (links must end at a regular file inside the tree; size caps per file and
 * per bundle).
 */
import type { KubeObject } from '../../kube/types.ts';
import type { ContentTree, TreeLimits } from '../../util/content-tree.ts';
import { openBundle } from '../bundle-files.ts';
import type { HoistError } from '../../util/errors.ts';
import { isHoistError } from '../../util/errors.ts';
import { combineProcessErrors, processError } from '../errors.ts';
import { duplicateErrors, readManifest } from '../manifest.ts';
import type { SourcedObject } from '../manifest.ts';
import { yamlBudget } from '../yaml/budget.ts';
import { parseManifestStream } from '../yaml/stream.ts';
import { isJsonObject } from '../yaml/values.ts';
import type { JsonObject, JsonValue } from '../yaml/values.ts';
import { readClusterServiceVersion } from './csv.ts';
import type { ClusterServiceVersion } from './csv.ts';
import { ProcessCode } from '../errors.ts';

export const ANNOTATIONS_FILE = 'metadata/annotations.yaml';
export const PROPERTIES_FILE = 'metadata/properties.yaml';
export const MANIFESTS_DIR = 'manifests';
export const PACKAGE_ANNOTATION = 'operators.operatorframework.io.bundle.package.v1';
export const MEDIATYPE_ANNOTATION = 'operators.operatorframework.io.bundle.mediatype.v1';
export const CRD_API_VERSION = 'apiextensions.k8s.io/v1';

export interface RegistryV1Bundle {
  packageName: string;
  csv: ClusterServiceVersion;
  /** file the CSV came from, relative to the tree */
  csvFile: string;
  crds: SourcedObject[];
  others: SourcedObject[];
}

const WHO = 'registry-v1 processor';

/** The file's text through the bundle reader (containment rule, size caps); undefined when absent. */
function readText(tree: ContentTree, rel: string): Promise<string | undefined> {
  return tree.readTextOptional(rel);
}

function singleObject(text: string, file: string): JsonObject {
  const { documents } = parseManifestStream(text, file);
  const doc = documents[0];
  if (documents.length !== 1 || doc === undefined || !isJsonObject(doc.value)) {
    throw processError('expected a single YAML object', ProcessCode.InvalidBundle, file);
  }
  return doc.value;
}

async function readAnnotations(tree: ContentTree): Promise<Record<string, string>> {
  const text = await readText(tree, ANNOTATIONS_FILE);
  if (text === undefined) {
    throw processError(`not a registry+v1 bundle: ${ANNOTATIONS_FILE} is missing`, ProcessCode.InvalidBundle, ANNOTATIONS_FILE);
  }
  const annotations = singleObject(text, ANNOTATIONS_FILE)['annotations'];
  if (!isJsonObject(annotations)) {
    throw processError('expected an "annotations" map', ProcessCode.InvalidBundle, ANNOTATIONS_FILE);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations)) {
    // OLM decodes these into map[string]string: a YAML `true` or number would be an error there
    if (typeof v !== 'string') throw processError(`annotation ${k} must be a string`, ProcessCode.InvalidBundle, ANNOTATIONS_FILE);
    out[k] = v;
  }
  return out;
}

/**
 * operator-registry property.Property values from metadata/properties.yaml, appended to those
 * already in the CSV's olm.properties annotation and re-encoded as compact JSON with sorted keys
 * (what Go's json.Marshal produces for values that went through sigs.k8s.io/yaml).
 */
async function mergeProperties(tree: ContentTree, csv: ClusterServiceVersion, csvFile: string): Promise<void> {
  const text = await readText(tree, PROPERTIES_FILE);
  if (text === undefined || text.trim() === '') return;
  let existing: JsonValue[] = [];
  const current = csv.annotations['olm.properties'];
  if (current !== undefined) {
    try {
      const parsed: unknown = JSON.parse(current);
      if (!Array.isArray(parsed)) throw new Error('not a list');
      existing = parsed as JsonValue[];
    } catch (e) {
      throw processError(`annotation olm.properties is not a JSON list of properties: ${(e as Error).message}`, ProcessCode.InvalidBundle, csvFile, e);
    }
  }
  const props = singleObject(text, PROPERTIES_FILE)['properties'];
  if (props !== undefined && props !== null && !Array.isArray(props)) {
    throw processError('"properties" must be a list', ProcessCode.InvalidBundle, PROPERTIES_FILE);
  }
  const all = [...existing, ...((props as JsonValue[] | null | undefined) ?? [])].map((p, i) => {
    if (!isJsonObject(p)) throw processError(`property ${i} must be an object with type and value`, ProcessCode.InvalidBundle, PROPERTIES_FILE);
    return { type: p['type'] ?? '', value: p['value'] ?? null };
  });
  csv.annotations['olm.properties'] = `[${all.map((p) => `{"type":${JSON.stringify(p.type)},"value":${sortedJson(p.value)}}`).join(',')}]`;
}

function sortedJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (isJsonObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${sortedJson(v[k] as JsonValue)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Loads and classifies the bundle. Every problem found is reported in one terminal HoistError. */
export async function loadRegistryV1Bundle(root: string, limits: Partial<TreeLimits> = {}): Promise<RegistryV1Bundle> {
  const tree = openBundle(root, WHO, limits);
  const annotations = await readAnnotations(tree);
  const mediaType = annotations[MEDIATYPE_ANNOTATION];
  if (mediaType !== undefined && mediaType !== 'registry+v1') {
    throw processError(`bundle media type is "${mediaType}", not registry+v1`, ProcessCode.InvalidBundle, ANNOTATIONS_FILE);
  }

  const entries = await tree.list(MANIFESTS_DIR);
  if (entries === undefined) {
    throw processError(`not a registry+v1 bundle: ${MANIFESTS_DIR}/ is missing or not a directory`, ProcessCode.InvalidBundle, MANIFESTS_DIR);
  }

  const errors: HoistError[] = [];
  const objects: SourcedObject[] = [];
  const budget = yamlBudget();
  for (const entry of entries) {
    const rel = `${MANIFESTS_DIR}/${entry.name}`;
    // editor and OS litter (.DS_Store, .swp) is not part of a bundle
    if (entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) {
      errors.push(processError(`subdirectories are not allowed in ${MANIFESTS_DIR}/`, ProcessCode.InvalidBundle, rel));
      continue;
    }
    try {
      const text = (await readText(tree, rel)) ?? '';
      const read = await readManifest(text, rel, budget);
      objects.push(...read.objects);
      errors.push(...read.errors);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
    }
  }

  const csvs = objects.filter((o) => o.object.kind === 'ClusterServiceVersion');
  if (csvs.length === 0 && errors.length === 0) {
    errors.push(processError(`no ClusterServiceVersion found in ${MANIFESTS_DIR}/`, ProcessCode.InvalidBundle, MANIFESTS_DIR));
  }
  if (csvs.length > 1) {
    errors.push(
      processError(`more than one ClusterServiceVersion: ${csvs.map((c) => `${c.file}:${c.line ?? 1}`).join(', ')}`, ProcessCode.InvalidBundle, csvs[1]?.file),
    );
  }
  const crds = objects.filter((o) => o.object.kind === 'CustomResourceDefinition');
  for (const crd of crds) {
    // OLM v1 decodes CRDs into apiextensions/v1 types; an older version would be silently mangled
    if (crd.object.apiVersion !== CRD_API_VERSION) {
      errors.push(
        processError(
          `CustomResourceDefinition ${crd.object.metadata.name} uses ${crd.object.apiVersion}; registry+v1 bundles must use ${CRD_API_VERSION}`,
          ProcessCode.UnsupportedApi,
          `${crd.file}:${crd.line ?? 1}`,
        ),
      );
    }
  }
  const others = objects.filter((o) => o.object.kind !== 'ClusterServiceVersion' && o.object.kind !== 'CustomResourceDefinition');
  errors.push(...duplicateErrors([...crds, ...others]));

  const packageName = annotations[PACKAGE_ANNOTATION] ?? '';
  if (packageName === '') {
    errors.push(processError(`package name is empty: annotation ${PACKAGE_ANNOTATION} is required`, ProcessCode.InvalidBundle, ANNOTATIONS_FILE));
  }

  let csv: ClusterServiceVersion | undefined;
  const csvSource = csvs[0];
  if (csvSource) {
    try {
      csv = readClusterServiceVersion(csvSource.object as unknown as JsonObject, csvSource.file);
      await mergeProperties(tree, csv, csvSource.file);
    } catch (e) {
      if (!isHoistError(e)) throw e;
      errors.push(e);
    }
  }

  const failure = combineProcessErrors(errors);
  if (failure) throw failure;
  if (csv === undefined || csvSource === undefined) {
    // unreachable: a missing CSV is reported above
    throw processError(`no ClusterServiceVersion found in ${MANIFESTS_DIR}/`, ProcessCode.InvalidBundle, MANIFESTS_DIR);
  }
  return { packageName, csv, csvFile: csvSource.file, crds, others };
}

/** A deep copy of an object, so generators never modify what the bundle loader returned. */
export function cloneObject<T extends KubeObject | JsonObject>(obj: T): T {
  return structuredClone(obj);
}
