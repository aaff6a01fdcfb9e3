/**
 * How a layer declares its error codes: once, as a `const` array of kebab-case strings (its union
 * type is the array's element type), with named constants derived from it (`not-found` →
 * `NotFound`) so call sites read `SourceCode.NotFound` and a typo is a compile error either way. A
 * layer that fails with a code a lower layer declares borrows the name (`borrow`) rather than
 * declaring the string again.
 */

/** `not-found` → `NotFound`, as a type */
export type CodeName<S extends string> = S extends `${infer H}-${infer T}` ? `${Capitalize<H>}${CodeName<T>}` : Capitalize<S>;

/** the named constants of a code array: `{ NotFound: 'not-found', ... }` */
export type CodeNames<C extends string> = { readonly [K in C as CodeName<K>]: K };

function codeName(code: string): string {
  return code
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** Named constants for a layer's code array. */
export function codeNames<const A extends readonly string[]>(codes: A): CodeNames<A[number]> {
  return Object.freeze(Object.fromEntries(codes.map((c) => [codeName(c), c]))) as CodeNames<A[number]>;
}

/** Some of a lower layer's named codes, for a layer that fails with them too. */
export function borrow<T extends Readonly<Record<string, string>>, const K extends keyof T>(names: T, ...keys: K[]): { readonly [P in K]: T[P] } {
  return Object.freeze(Object.fromEntries(keys.map((k) => [k, names[k]]))) as { readonly [P in K]: T[P] };
}
