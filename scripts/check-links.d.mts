// types for scripts/check-links.mjs, for its unit test
export function report(base?: string): { code: number; lines: string[] };
export function slug(text: string): string;
