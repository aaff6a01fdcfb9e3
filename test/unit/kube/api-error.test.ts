/**
 * An API error's message always says why (chaos runs logged "create v1 Secret ns/name: " with
 * nothing after the colon while kube-apiserver restarted): an empty Status message falls back to
 * its reason and code, a transport cause without text to its inner errors, code or name.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, TransportError } from '../../../src/kube/api-error.ts';

const subject = 'v1 Secret ns/hoist-rev-1';

describe('ApiError message', () => {
  it("is the server's message when it sent one", () => {
    const e = new ApiError({
      statusCode: 503,
      verb: 'create',
      subject,
      status: { kind: 'Status', message: 'apiserver is shutting down', reason: 'ServiceUnavailable' },
    });
    expect(e.message).toBe('create v1 Secret ns/hoist-rev-1: apiserver is shutting down');
  });

  it('names the reason and code when the Status message is empty', () => {
    const e = new ApiError({
      statusCode: 500,
      verb: 'create',
      subject,
      status: { kind: 'Status', message: '', reason: 'InternalError' },
      body: '{"kind":"Status"}',
    });
    expect(e.message).toBe('create v1 Secret ns/hoist-rev-1: InternalError (http status 500)');
    expect(e.reason).toBe('InternalError');
  });

  it('is the raw body, else the code, without a Status', () => {
    expect(new ApiError({ statusCode: 502, verb: 'get', subject, status: undefined, body: ' bad gateway ' }).message).toBe(
      'get v1 Secret ns/hoist-rev-1: bad gateway',
    );
    expect(new ApiError({ statusCode: 502, verb: 'get', subject, status: undefined, body: '' }).message).toBe('get v1 Secret ns/hoist-rev-1: http status 502');
  });
});

describe('TransportError message', () => {
  it("is the cause's message", () => {
    const e = new TransportError('list', subject, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    expect(e.message).toBe('list v1 Secret ns/hoist-rev-1: connect ECONNREFUSED 127.0.0.1:1');
    expect(e.code).toBe('ECONNREFUSED');
  });

  it('lists the inner errors of an AggregateError without a message', () => {
    const agg = new AggregateError([new Error('connect ECONNREFUSED ::1:1'), new Error('connect ECONNREFUSED 127.0.0.1:1')], '');
    expect(new TransportError('create', subject, agg).message).toBe(
      'create v1 Secret ns/hoist-rev-1: connect ECONNREFUSED ::1:1; connect ECONNREFUSED 127.0.0.1:1',
    );
  });

  it('falls back to the code, then the name', () => {
    expect(new TransportError('create', subject, Object.assign(new Error(''), { code: 'ECONNRESET' })).message).toBe(
      'create v1 Secret ns/hoist-rev-1: ECONNRESET',
    );
    expect(new TransportError('create', subject, new TypeError('')).message).toBe('create v1 Secret ns/hoist-rev-1: TypeError without a message');
  });
});
