// types for scripts/eslint/hoist.mjs, for its unit test
import type { ESLint, Linter } from 'eslint';

export declare const hoist: ESLint.Plugin;
export declare function hoistConfig(root: string): Linter.Config;
