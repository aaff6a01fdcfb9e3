/** The content store's error vocabulary. */
import { codeNames } from '../util/codes.ts';
import { HoistError } from '../util/errors.ts';

/** Codes of content-store failures. */
export const CACHE_CODES = ['cache-budget', 'cache-full', 'cache-race'] as const;
export type CacheCode = (typeof CACHE_CODES)[number];
export const CacheCode = codeNames(CACHE_CODES);

declare module '../util/errors.ts' {
  interface HoistCodes {
    cache: CacheCode;
  }
}

/** A content-store failure: always stage fetch, subject the content key. */
export function cacheError(message: string, code: CacheCode, subject: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: 'fetch', code, subject, terminal });
}
