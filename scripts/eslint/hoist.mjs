/**
 * Hoist's local ESLint plugin (wired in eslint.config.js): the layer rule and no circular imports
 * (layers.mjs), declared error codes (codes.mjs), no branch on error text (error-text.mjs).
 */
import { declaredCodesRule } from './codes.mjs';
import { noErrorTextBranchRule } from './error-text.mjs';
import { layersRule, noCycleRule } from './layers.mjs';

export const hoist = {
  meta: { name: 'hoist' },
  rules: {
    layers: layersRule,
    'no-cycle': noCycleRule,
    'declared-codes': declaredCodesRule,
    'no-error-text-branch': noErrorTextBranchRule,
  },
};

/** the plugin's rules, all errors, for the files the layers cover */
export function hoistConfig(root) {
  return {
    files: ['api/**/*.ts', 'src/**/*.ts', 'examples/**/*.ts'],
    plugins: { hoist },
    settings: { hoist: { root } },
    rules: { 'hoist/layers': 'error', 'hoist/no-cycle': 'error', 'hoist/declared-codes': 'error', 'hoist/no-error-text-branch': 'error' },
  };
}
