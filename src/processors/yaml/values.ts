/**
 * The values a manifest stream is read into: JSON values (what kubectl's YAML-to-JSON step
 * produces), one per non-empty document, with the line it starts on.
 *
 * Pure: types and two small helpers over plain objects.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export interface ParsedDocument {
  /** never null: empty documents are dropped, as kubectl drops them */
  value: JsonValue;
  /** 1-based line where the document's content starts */
  line: number;
}

export interface ParsedStream {
  documents: ParsedDocument[];
  warnings: string[];
}

/** Assigns an own property, also for the key "__proto__" (a plain assignment would set the prototype). */
export function setKey(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
