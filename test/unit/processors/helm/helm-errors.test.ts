import { describe, expect, it } from 'vitest';
import { helmFailure, parseHelmStderr } from '../../../../src/processors/helm/helm-errors.ts';

describe('parseHelmStderr', () => {
  it('reads parse errors', () => {
    const r = parseHelmStderr('Error: parse error at (c/templates/x.yaml:3): function "foo" not defined\n\nUse --debug flag to render out invalid YAML\n');
    expect(r).toEqual({
      code: 'template-error',
      message: 'parse error at (c/templates/x.yaml:3): function "foo" not defined',
      location: { file: 'c/templates/x.yaml', line: 3 },
    });
  });

  it('reads execution errors and fail/required messages', () => {
    expect(parseHelmStderr('Error: execution error at (c/templates/x.yaml:1:3): nope\n').location).toEqual({ file: 'c/templates/x.yaml', line: 1 });
    expect(
      parseHelmStderr('Error: template: c/templates/x.yaml:7:13: executing "c/templates/x.yaml" at <.Values.x.y>: nil pointer evaluating interface {}.y\n')
        .location,
    ).toEqual({ file: 'c/templates/x.yaml', line: 7 });
  });

  it('reads YAML errors in rendered output (no line in the template)', () => {
    const r = parseHelmStderr(
      'Error: YAML parse error on c/templates/bad.yaml: error converting YAML to JSON: yaml: line 5: mapping values are not allowed in this context\n',
    );
    expect(r.code).toBe('template-error');
    expect(r.location).toEqual({ file: 'c/templates/bad.yaml' });
  });

  it('keeps every line of a schema error', () => {
    const r = parseHelmStderr(
      "Error: values don't meet the specifications of the schema(s) in the following chart(s):\nc:\n- at '/replicas': got string, want integer\n",
    );
    expect(r.code).toBe('values-schema');
    expect(r.message.split('\n')).toHaveLength(3);
    expect(r.location).toBeUndefined();
  });

  it('skips warnings printed before the error', () => {
    const r = parseHelmStderr('walk.go:75: found symbolic link in path: /x\nError: INSTALLATION FAILED: something broke\n');
    expect(r).toEqual({ code: 'helm-failed', message: 'something broke' });
  });

  it('builds a terminal error naming chart and template', () => {
    const e = helmFailure('Error: parse error at (c/templates/x.yaml:3): bad\n', 'c-1.0.0');
    expect(e.subject).toBe('helm chart c-1.0.0 c/templates/x.yaml:3');
    expect(e.terminal).toBe(true);
    expect(e.stage).toBe('process');
    expect(e.reason).toBe('ProcessFailed');
    expect(e.describe()).toBe('process helm chart c-1.0.0 c/templates/x.yaml:3: parse error at (c/templates/x.yaml:3): bad');
  });
});
