/**
 * CEL fragments the library's rules are written with (plain strings; the rules compile them like
 * any user's). `self` is the object. A read of a field the object has not written yet fails the
 * evaluation, and the rule counts that as false (rule.ts), so the fragments need no `has()` guards
 * on the way down.
 */

const quote = (s: string): string => JSON.stringify(s);

/** the object has a condition of this type with this status */
export const cond = (type: string, status = 'True'): string => `self.status.conditions.exists(c, c.type == ${quote(type)} && c.status == ${quote(status)})`;

/** the object has no condition of this type with this status (also when it has no conditions yet) */
export const notCond = (type: string, status = 'True'): string => `!(has(self.status.conditions) && ${cond(type, status)})`;

/** a field of the condition of this type (fails when there is none) */
export const condField = (type: string, field: 'message' | 'reason' | 'status'): string =>
  `self.status.conditions.filter(c, c.type == ${quote(type)})[0].${field}`;

/** the lowest of a list of generations (a CEL list expression), or its first when none is below the object's generation */
export const lowest = (gens: string): string =>
  `cel.bind(g, ${gens}, g.exists(x, x < self.metadata.generation) ? g.filter(x, x < self.metadata.generation)[0] : g[0])`;

/**
 * The generation the conditions of these types were written for, the lowest of them (a condition
 * without `observedGeneration` counts as current; none of these types: not observed yet).
 */
export const condGeneration = (...types: string[]): string =>
  lowest(
    `self.status.conditions.filter(c, c.type in [${types.map(quote).join(', ')}]).map(c, has(c.observedGeneration) ? c.observedGeneration : self.metadata.generation)`,
  );

/** the first message that applies: `[when, message]` pairs, then a fallback expression */
export const firstOf = (cases: ReadonlyArray<readonly [string, string]>, otherwise: string): string =>
  cases.reduceRight((rest, [when, then]) => `(${when}) ? ${then} : ${rest}`, otherwise);

/** "<reason>: <message>" of the condition of this type (the status when it has no reason; no message: the reason alone) */
export const condSummary = (type: string): string =>
  `cel.bind(x, self.status.conditions.filter(c, c.type == ${quote(type)})[0], (has(x.reason) && x.reason != "" ? x.reason : x.status) + (has(x.message) && x.message != "" ? ": " + x.message : ""))`;
