/**
 * The small node tree both YAML readers build (event-reader.ts, document-reader.ts) and the walk
 * (walk.ts) turns into JSON values: every scalar kept as written text, nothing interpreted.
 *
 * Types and one limit only.
 */

/** Nesting beyond this is refused rather than risking the stack. */
export const MAX_DEPTH = 512;

/** A scalar, sequence, mapping or alias, with the offset its line is reported from. */
export type YNode =
  | { kind: 'scalar'; pos: number; text: string; plain: boolean; tag: string }
  | { kind: 'seq'; pos: number; items: Array<YNode | null> }
  | { kind: 'map'; pos: number; pairs: Array<[YNode | null, YNode | null]> }
  | { kind: 'alias'; pos: number; name: string; target: YNode | undefined };
export type YScalar = Extract<YNode, { kind: 'scalar' }>;
