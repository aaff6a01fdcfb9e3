/**
 * What is kept out of status, Events, logs and previews for a BundleDeployment with
 * spec.decryption (src/reconciler/redaction.ts, src/cli/redact-objects.ts, src/util/redact.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Condition } from '../../../api/v1alpha2/types.ts';
import { redactForDisplay } from '../../../src/cli/redact-objects.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { redactConditions, redactingEvents, revisionRedactions } from '../../../src/reconciler/redaction.ts';
import { redact, redactionList } from '../../../src/util/redact.ts';

const secret = (data: Record<string, string>, stringData: Record<string, string> = {}): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, data, stringData }) as unknown as KubeObject;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('redactionList and redact', () => {
  it('longest first, short strings left alone, every occurrence blanked', () => {
    expect(redactionList(['abc', 'hunter2', 'hunter2-long', 'hunter2'])).toEqual(['hunter2-long', 'hunter2']);
    expect(redact('pw hunter2-long and hunter2, again hunter2; abc', redactionList(['hunter2', 'hunter2-long', 'abc']))).toBe(
      'pw <redacted> and <redacted>, again <redacted>; abc',
    );
  });
});

describe('revisionRedactions', () => {
  it("the decrypted values and every Secret's values (data decoded and as written, stringData)", () => {
    const got = revisionRedactions({
      objects: [
        secret({ password: b64('db-password') }, { token: 'tok-value' }),
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'not-secret' } } as KubeObject,
      ],
      hooks: [],
      sensitive: ['decrypted-elsewhere'],
    });
    expect(got).toEqual(expect.arrayContaining(['decrypted-elsewhere', b64('db-password'), 'db-password', 'tok-value']));
    expect(got).not.toContain('not-secret');
  });

  it('conditions and events are blanked with them', () => {
    const conditions: Condition[] = [
      { type: 'Installed', status: 'False', reason: 'ApplyFailed', message: 'Invalid value: "db-password"', lastTransitionTime: 't' },
    ];
    expect(redactConditions(conditions, ['db-password'])?.[0]?.message).toBe('Invalid value: "<redacted>"');
    expect(redactConditions(conditions, [])).toBe(conditions);
    const seen: string[] = [];
    const events = redactingEvents({ event: (_bd, _t, _r, m) => void seen.push(m) }, (bd) => (bd === 'a' ? ['db-password'] : undefined));
    events.event({ metadata: { name: 'a' } } as never, 'Warning', 'X', 'failed: db-password');
    events.event({ metadata: { name: 'b' } } as never, 'Warning', 'X', 'failed: db-password');
    expect(seen).toEqual(['failed: <redacted>', 'failed: db-password']);
  });
});

describe('redactForDisplay', () => {
  it("masks a Secret's values as kubectl diff does, marking changed ones, and blanks decrypted strings elsewhere", () => {
    const live = secret({ a: b64('same'), b: b64('old-value') });
    const after = secret({ a: b64('same'), b: b64('new-value'), c: b64('added') });
    expect((redactForDisplay(live, [], after, 'before') as unknown as { data: unknown }).data).toEqual({ a: '***', b: '*** (before)' });
    expect((redactForDisplay(after, [], live, 'after') as unknown as { data: unknown }).data).toEqual({ a: '***', b: '*** (after)', c: '***' });
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', annotations: { note: 'url https://u:decrypted-pw@h' } },
      data: { k: 'decrypted-pw' },
    } as unknown as KubeObject;
    const shown = redactForDisplay(cm, ['decrypted-pw']) as unknown as { data: { k: string }; metadata: { annotations: { note: string } } };
    expect(shown.data.k).toBe('<redacted>');
    expect(shown.metadata.annotations.note).toBe('url https://u:<redacted>@h');
    expect((cm as unknown as { data: { k: string } }).data.k).toBe('decrypted-pw');
  });
});
