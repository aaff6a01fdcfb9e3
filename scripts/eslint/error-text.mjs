/**
 * hoist/no-error-text-branch: no branch on an error's message or name text (`err.message ===`,
 * `e.message.includes(…)`, `/…/.test(err.message)`): messages are for people and change; branch
 * on the error's type or code (docs/decisions.md "Error vocabulary").
 */
import { checked, rootOf } from './layers.mjs';

const ERROR_NAMES = new Set(['e', 'err', 'error', 'cause']);
const TEXT_METHODS = new Set(['startsWith', 'endsWith', 'includes', 'match']);

/** `err.message` or `e.name`: the text of what is, by its name, an error */
const isErrorText = (n) =>
  n?.type === 'MemberExpression' &&
  !n.computed &&
  n.object.type === 'Identifier' &&
  ERROR_NAMES.has(n.object.name) &&
  n.property.type === 'Identifier' &&
  (n.property.name === 'message' || n.property.name === 'name');

/** @type {import('eslint').Rule.RuleModule} */
export const noErrorTextBranchRule = {
  meta: {
    type: 'problem',
    docs: { description: "no branch on an error's message or name text" },
    schema: [],
    messages: { text: "a branch on error text ({{what}}): branch on the error's type or code" },
  },
  create(context) {
    if (!checked(rootOf(context), context.filename)) return {};
    const what = (n) => context.sourceCode.getText(n);
    return {
      BinaryExpression(node) {
        if (!['===', '!==', '==', '!='].includes(node.operator)) return;
        const side = [node.left, node.right].find(isErrorText);
        if (side) context.report({ node, messageId: 'text', data: { what: what(side) } });
      },
      CallExpression(node) {
        const c = node.callee;
        if (c.type !== 'MemberExpression' || c.computed || c.property.type !== 'Identifier') return;
        if (TEXT_METHODS.has(c.property.name) && isErrorText(c.object)) context.report({ node, messageId: 'text', data: { what: what(c.object) } });
        else if (c.property.name === 'test' && isErrorText(node.arguments[0]))
          context.report({ node, messageId: 'text', data: { what: what(node.arguments[0]) } });
      },
    };
  },
};
