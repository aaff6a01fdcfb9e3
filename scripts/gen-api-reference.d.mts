// types for scripts/gen-api-reference.mjs, for its unit test
export const REGENERATE: string;
export const PAGES: { crd: string; page: string }[];
export function renderCRD(crd: unknown, source: string): string;
export function render(base?: string): { page: string; text: string }[];
