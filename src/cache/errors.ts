/** The content store's error vocabulary. */
import { HoistError } from '../util/errors.ts';

/** Codes of content-store failures. */
export const CacheCode = {
  CacheBudget: 'cache-budget',
  CacheFull: 'cache-full',
  CacheRace: 'cache-race',
} as const;
export type CacheCode = (typeof CacheCode)[keyof typeof CacheCode];

/** A content-store failure: always stage fetch, subject the content key. */
export function cacheError(message: string, code: CacheCode, subject: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: 'fetch', code, subject, terminal });
}
