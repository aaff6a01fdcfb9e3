/** The one sleep of the tests: src/util/sleep.ts (resolves after ms, or early when the signal fires). */
export { sleep } from '../../src/util/sleep.ts';
