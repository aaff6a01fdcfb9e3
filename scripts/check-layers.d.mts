// types for scripts/check-layers.mjs, for its unit test
export function report(base?: string): { code: number; lines: string[] };
