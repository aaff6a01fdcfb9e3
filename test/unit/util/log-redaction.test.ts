import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/util/log.ts';
import { CENSOR, redactLogFields } from '../../../src/util/log-redaction.ts';

/** the redact paths the logger used before log-redaction.ts: pino's own redactor is the reference */
const PINO_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
  'token',
  '*.token',
  'credentials',
  '*.credentials',
  'data',
  '*.data',
  '.dockerconfigjson',
];

function lineOf(make: (out: Writable) => pino.Logger, fields: Record<string, unknown>): unknown {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const log = make(out);
  log.info(fields, 'm');
  log.flush();
  const line = JSON.parse(text) as Record<string, unknown>;
  delete line['time'];
  return line;
}
const withPino = (out: Writable) => pino({ name: 'hoist', base: undefined, redact: { paths: PINO_PATHS, censor: CENSOR } }, out);
const withOurs = (out: Writable) => createLogger({ destination: out });

class TokenError extends Error {
  token = 'hunter2';
}

describe('redactLogFields', () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['nothing to censor', { bd: 'a', durationMs: 3, stagesMs: { fetch: 1, apply: 2 }, list: ['x'] }],
    ['top-level credential fields', { bd: 'a', token: 's3cret', password: 'p', authorization: 'Bearer x', credentials: { user: 'u' }, data: { k: 'v' } }],
    ['one level down', { request: { url: 'https://h', token: 't', password: 'p' }, secret: { data: { '.dockerconfigjson': 'e30=' } } }],
    [
      'headers.authorization at the top and one level down',
      { headers: { authorization: 'Basic x', accept: 'a' }, req: { headers: { authorization: 'Bearer y' } } },
    ],
    ['deeper than one level is not a path', { a: { b: { token: 'kept' } } }],
    ['arrays are not looked into', { items: [{ token: 'kept' }], token2: 'kept' }],
    ['null and scalars', { a: null, token: null, n: 1, b: true }],
    ['an error field keeps its message, its own token censored', { err: new TokenError('boom') }],
  ];
  it.each(cases)('%s: the same line as pino redact with the old paths', (_, fields) => {
    const ours = lineOf(withOurs, fields);
    expect(ours).toEqual(lineOf(withPino, fields));
  });

  it("censors a child logger's credential-named bindings", () => {
    const line = lineOf((out) => withOurs(out).child({ token: 't', target: 'c', headers: { authorization: 'x' } }), { bd: 'a' });
    expect(line).toMatchObject({ token: CENSOR, target: 'c', bd: 'a', headers: { authorization: CENSOR } });
  });

  it("never changes the caller's objects, and hands back the same object when nothing is censored", () => {
    const inner = { token: 't', headers: { authorization: 'x' } };
    const fields = { req: inner, bd: 'a' };
    const out = redactLogFields(fields);
    expect(out).not.toBe(fields);
    expect(inner).toEqual({ token: 't', headers: { authorization: 'x' } });
    expect(out['req']).toEqual({ token: CENSOR, headers: { authorization: CENSOR } });
    const clean = { bd: 'a', stagesMs: { fetch: 1 } };
    expect(redactLogFields(clean)).toBe(clean);
  });
});
