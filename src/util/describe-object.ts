/**
 * How objects are named in messages. Pure; lives in src/util so the pure layers (processors,
 * health) can use it without importing src/kube at run time.
 */

/** "group/version Kind ns/name", the way objects are named in messages. */
export function describeObject(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string {
  const where = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
  return `${obj.apiVersion} ${obj.kind} ${where}`;
}
