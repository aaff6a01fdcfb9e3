import { describe, expect, it } from 'vitest';
import { nonDeterministicCalls } from '../../../../src/processors/helm/determinism.ts';

describe('nonDeterministicCalls', () => {
  it('finds random, time and lookup calls inside actions only', () => {
    const t = [
      'password: {{ randAlphaNum 16 | b64enc }}',
      'ca: {{- $ca := genCA "x" 365 -}}',
      'time: {{ now | date "2006" }}',
      '{{- $s := (lookup "v1" "Secret" .Release.Namespace "x") }}',
      'text outside actions: now randAlphaNum',
      '{{/* a comment mentioning uuidv4 */}}',
      '{{ include "chart.now" . }} {{ .Values.now }} {{ $now }}',
    ].join('\n');
    expect(nonDeterministicCalls(t)).toEqual(['genCA', 'lookup', 'now', 'randAlphaNum']);
  });
});
