/**
 * A cost estimate of a CEL expression over its parsed AST (@marcbachmann/cel-js exposes it; the
 * library has no cost limit of its own), in the spirit of the Kubernetes API server's: every
 * node costs 1, a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) costs its range's
 * size times its body, so nested comprehensions multiply, and string work (concatenation,
 * `contains`, `split`, ...) costs the length of the strings it reads. `matches` costs the text's
 * length times the instructions of the pattern's RE2 program (cel-regex.ts): its own for a literal
 * pattern, the largest allowed (MAX_REGEX_PROGRAM) for a pattern read from the object.
 *
 * Sizes of what the expression reads from the object are one number per kind, `DataSizes`: the
 * longest list or map and the longest string. Before any evaluation the estimate uses assumed
 * sizes (`ASSUMED_DATA_SIZES`), and a check over the limit is refused when it is compiled; before
 * each evaluation it uses the sizes measured on the object (`measureData`), and an evaluation
 * over the limit is not started. The estimate is an upper bound of the work the evaluator does
 * for the shapes it models (literals, reads from `self`, `+`, the comprehensions, `cel.bind`).
 *
 * Pure.
 */
import type { ASTNode } from '@marcbachmann/cel-js';
import { compileRegex, MAX_REGEX_PROGRAM } from './cel-regex.ts';

/** the most an expression may cost, estimated before compiling and measured before evaluating */
export const CEL_COST_LIMIT = 1_000_000;

export interface DataSizes {
  /** elements of the longest list, or keys of the largest map */
  list: number;
  /** characters of the longest string */
  str: number;
}

/** what compile-time estimates assume of objects not seen yet */
export const ASSUMED_DATA_SIZES: DataSizes = Object.freeze({ list: 100, str: 100 });

/** deeper objects are refused by measureData (and CEL evaluation recurses as deep) */
export const MAX_DATA_DEPTH = 100;

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);
/** functions whose work grows with the strings they read */
const STRING_WORK = new Set([
  'contains',
  'startsWith',
  'endsWith',
  'indexOf',
  'lastIndexOf',
  'split',
  'join',
  'lowerAscii',
  'upperAscii',
  'trim',
  'substring',
  'replace',
]);

type Size = DataSizes;
type Env = ReadonlyMap<string, Size>;

const add = (a: Size, b: Size): Size => ({ list: a.list + b.list, str: a.str + b.str });
const max = (a: Size, b: Size): Size => ({ list: Math.max(a.list, b.list), str: Math.max(a.str, b.str) });
const one: Size = { list: 1, str: 1 };

/** the estimated cost of evaluating `ast` once, with reads from the object of the given sizes */
export function estimateCost(ast: ASTNode, data: DataSizes): number {
  return new Estimator(data).cost(ast, new Map());
}

class Estimator {
  constructor(private readonly data: DataSizes) {}

  cost(n: ASTNode, env: Env): number {
    switch (n.op) {
      case 'value':
      case 'id':
        return 1;
      case 'rcall': {
        const [name, receiver, args] = n.args;
        if (COMPREHENSIONS.has(name) && args.length >= 2) {
          const v = args[0];
          const inner = v?.op === 'id' ? new Map(env).set(v.args, this.element(receiver, env)) : env;
          const body = args.slice(1).reduce((s, a) => s + this.cost(a, inner), 1);
          return 1 + this.cost(receiver, env) + this.size(receiver, env).list * body;
        }
        if (name === 'bind' && receiver.op === 'id' && receiver.args === 'cel' && args.length === 3) {
          const [v, value, body] = args as [ASTNode, ASTNode, ASTNode];
          const inner = v.op === 'id' ? new Map(env).set(v.args, this.size(value, env)) : env;
          return 1 + this.cost(value, env) + this.cost(body, inner);
        }
        if (name === 'matches' && args.length === 1) {
          // RE2 steps through the text once per instruction of the compiled program at most
          const pattern = args[0]!;
          return 1 + this.size(receiver, env).str * regexProgramSize(pattern) + this.cost(receiver, env) + this.cost(pattern, env);
        }
        const work = STRING_WORK.has(name) ? [receiver, ...args].reduce((s, a) => s + this.size(a, env).str, 0) : 0;
        return 1 + work + this.cost(receiver, env) + args.reduce((s, a) => s + this.cost(a, env), 0);
      }
      case 'call': {
        const [, args] = n.args;
        return 1 + args.reduce((s, a) => s + this.cost(a, env), 0);
      }
      case '+': {
        const [a, b] = n.args;
        // concatenation copies both operands
        return 1 + this.cost(a, env) + this.cost(b, env) + this.size(a, env).str + this.size(b, env).str;
      }
      case 'list':
        return 1 + n.args.reduce((s, a) => s + this.cost(a, env), 0);
      case 'map':
        return 1 + n.args.reduce((s, [k, v]) => s + this.cost(k, env) + this.cost(v, env), 0);
      case '.':
      case '.?':
        return 1 + this.cost(n.args[0], env);
      case '!_':
      case '-_':
        return 1 + this.cost(n.args, env);
      default:
        // binary operators, indexing, &&, ||, ?:
        return 1 + (n.args as readonly ASTNode[]).reduce((s, a) => s + this.cost(a, env), 0);
    }
  }

  /** an upper bound of the value's length (list elements / map keys, and string characters) */
  size(n: ASTNode, env: Env): Size {
    switch (n.op) {
      case 'value':
        return typeof n.args === 'string' ? { list: 1, str: n.args.length } : one;
      case 'id':
        return env.get(n.args) ?? this.data;
      case 'list':
        return { list: n.args.length, str: n.args.reduce((s, a) => s + this.size(a, env).str, 0) };
      case 'map':
        return { list: n.args.length, str: n.args.reduce((s, [k, v]) => s + this.size(k, env).str + this.size(v, env).str, 0) };
      case '+':
        return add(this.size(n.args[0], env), this.size(n.args[1], env));
      case '?:':
        return max(this.size(n.args[1], env), this.size(n.args[2], env));
      case 'rcall': {
        const [name, receiver, args] = n.args;
        if (name === 'map' || name === 'filter') {
          const r = this.size(receiver, env);
          const v = args[0];
          const body = args[args.length - 1];
          if (name === 'filter' || !body || v?.op !== 'id') return r;
          const each = this.size(body, new Map(env).set(v.args, this.element(receiver, env)));
          return { list: r.list, str: r.list * each.str };
        }
        if (name === 'bind' && args.length === 3) {
          const [v, value, body] = args as [ASTNode, ASTNode, ASTNode];
          return this.size(body, v.op === 'id' ? new Map(env).set(v.args, this.size(value, env)) : env);
        }
        if (name === 'split' || name === 'join') return this.size(receiver, env);
        return [receiver, ...args].reduce((s, a) => max(s, this.size(a, env)), one);
      }
      default:
        // reads from the object (field access, indexing) and anything else
        return this.data;
    }
  }

  /** an upper bound of the size of one element of a list (or key of a map) */
  private element(range: ASTNode, env: Env): Size {
    if (range.op === 'list') return range.args.reduce((s, a) => max(s, this.size(a, env)), one);
    if (range.op === 'rcall' && range.args[0] === 'filter') return this.element(range.args[1], env);
    return this.data;
  }
}

/** a literal pattern's program size (a bad one is refused when parsed; here it costs the most) */
function regexProgramSize(pattern: ASTNode): number {
  if (pattern.op !== 'value' || typeof pattern.args !== 'string') return MAX_REGEX_PROGRAM;
  try {
    return compileRegex(pattern.args).programSize;
  } catch {
    return MAX_REGEX_PROGRAM;
  }
}

/**
 * The sizes of an object as `estimateCost` reads them. Walks the object once; undefined when it
 * nests deeper than MAX_DATA_DEPTH.
 */
export function measureData(value: unknown): DataSizes | undefined {
  const out: DataSizes = { list: 0, str: 0 };
  const visit = (v: unknown, depth: number): boolean => {
    if (depth > MAX_DATA_DEPTH) return false;
    if (typeof v === 'string') out.str = Math.max(out.str, v.length);
    else if (Array.isArray(v)) {
      out.list = Math.max(out.list, v.length);
      for (const x of v) if (!visit(x, depth + 1)) return false;
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      out.list = Math.max(out.list, keys.length);
      for (const k of keys) {
        out.str = Math.max(out.str, k.length);
        if (!visit((v as Record<string, unknown>)[k], depth + 1)) return false;
      }
    }
    return true;
  };
  return visit(value, 0) ? out : undefined;
}
