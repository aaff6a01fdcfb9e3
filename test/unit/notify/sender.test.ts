/** The sender's check of a Slack Web API answer: HTTP 200 with `ok: false` is a failed delivery. */
import { describe, expect, it } from 'vitest';
import { NotifyCode } from '../../../src/notify/errors.ts';
import { slackOk } from '../../../src/notify/sender.ts';
import type { HoistError } from '../../../src/util/errors.ts';

const outcome = (text: string): { code?: string; terminal?: boolean; message?: string } | 'ok' => {
  try {
    slackOk(text, 'NotificationProvider a/slack (slack.com)');
    return 'ok';
  } catch (e) {
    const h = e as HoistError;
    return { code: h.code, terminal: h.terminal, message: h.message };
  }
};

describe('slackOk', () => {
  it.each([
    ['{"ok":true,"channel":"C1","ts":"1.2"}', 'ok'],
    ['{"ok":false,"error":"channel_not_found"}', { code: NotifyCode.ProviderRefused, terminal: true, message: expect.stringContaining('(channel_not_found)') }],
    ['{"ok":false,"error":"invalid_auth"}', { code: NotifyCode.ProviderRefused, terminal: true }],
    ['{"ok":false,"error":"ratelimited"}', { code: NotifyCode.ProviderRefused, terminal: false }],
    ['{"ok":false,"error":"internal_error"}', { code: NotifyCode.ProviderRefused, terminal: false }],
    // an error that is not a plain word is not repeated
    ['{"ok":false,"error":"<script>secret xoxb-1</script>"}', { code: NotifyCode.ProviderRefused, terminal: true, message: 'Slack answered ok: false' }],
    ['ok', { code: NotifyCode.ProviderRefused, terminal: true }],
    ['{}', { code: NotifyCode.ProviderRefused, terminal: true }],
    ['', { code: NotifyCode.ProviderRefused, terminal: true }],
  ])('%s', (text, want) => {
    const got = outcome(text);
    if (want === 'ok') expect(got).toBe('ok');
    else expect(got).toMatchObject(want as object);
  });
});
