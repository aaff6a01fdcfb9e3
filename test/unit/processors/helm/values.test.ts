/** The helm processor's values layers: targetPath keys, --set typing, Secret text kept out of messages. */
import { describe, expect, it } from 'vitest';
import { redact, secretStrings, setValue, targetPathKeys, valuesFromLayers } from '../../../../src/processors/helm/values.ts';
import { relativePathProblem } from '../../../../src/processors/tree-paths.ts';
import { HoistError } from '../../../../src/util/errors.ts';

const ref = 'secret ns/db key values.yaml';

describe('targetPathKeys', () => {
  it.each([
    ['a', ['a']],
    ['a.b.c', ['a', 'b', 'c']],
    ['podAnnotations.app\\.kubernetes\\.io/name', ['podAnnotations', 'app.kubernetes.io/name']],
    ['a-b_c.d', ['a-b_c', 'd']],
  ])('%s → %j', (path, keys) => {
    expect(targetPathKeys(path)).toEqual(keys);
  });
  it.each(['a..b', '.a', 'a.', 'a[0]', 'a=b', 'a b'])('refuses %j', (path) => {
    expect(() => targetPathKeys(path)).toThrow(HoistError);
  });
});

describe('setValue (helm --set typing, Flux quote trimming)', () => {
  it.each([
    ['true', true],
    ['FALSE', false],
    ['Null', null],
    ['0', 0],
    ['42', 42],
    ['-7', -7],
    ['007', '007'],
    ['1.5', '1.5'],
    ['"42"', '42'],
    ["'true'", 'true'],
    ['a,b\\c', 'a,b\\c'],
    ['line\n', 'line\n'],
    ['99999999999999999999', '99999999999999999999'],
  ])('%j → %j', (text, value) => {
    expect(setValue(text)).toEqual(value);
  });
  it('refuses an integer it cannot pass on exactly', () => {
    expect(() => setValue('9007199254740993')).toThrow(/beyond ±2\^53/);
  });
});

describe('relativePathProblem', () => {
  it.each([
    ['values-prod.yaml', undefined],
    ['env/prod.yaml', undefined],
    ['/etc/passwd', /relative/],
    ['../other/values.yaml', /'\.\.'/],
    ['a/../../b', /'\.\.'/],
    ['a\\b', /backslash/],
  ])('%j', (path, problem) => {
    if (problem === undefined) expect(relativePathProblem(path)).toBeUndefined();
    else expect(relativePathProblem(path)).toMatch(problem);
  });
});

describe('valuesFromLayers', () => {
  it('a values.yaml at the root, or the whole text at a targetPath', () => {
    const layers = valuesFromLayers([
      { ref, text: 'db:\n  password: s3cr3t-pw\n  port: 5432\n', secret: true },
      { ref: 'configmap ns/c key host', text: 'db.internal', targetPath: 'db.host', secret: false },
    ]);
    expect(layers).toEqual([
      { from: ref, secret: true, values: { db: { password: 's3cr3t-pw', port: 5432 } } },
      { from: 'configmap ns/c key host', secret: false, values: { db: { host: 'db.internal' } } },
    ]);
  });

  it('a Secret that is not valid YAML: the reference and the line, none of the text', () => {
    const text = 'user: admin\npassword: "hunter2-do-not-show\n';
    try {
      valuesFromLayers([{ ref, text, secret: true }]);
      expect.unreachable();
    } catch (e) {
      const err = e as HoistError;
      expect(err.message).toMatch(/^secret ns\/db key values\.yaml is not valid YAML \(line \d+\)$/);
      expect(err.describe()).not.toContain('hunter2');
      expect(err.terminal).toBe(true);
    }
  });

  it('refuses a list or several documents', () => {
    expect(() => valuesFromLayers([{ ref, text: '- a\n- b\n', secret: true }])).toThrow(/is not a map of values \(it is a list\)/);
    expect(() => valuesFromLayers([{ ref, text: 'a: 1\n---\nb: 2\n', secret: true }])).toThrow(/holds 2 YAML documents/);
  });

  it('an empty text is no values', () => {
    expect(valuesFromLayers([{ ref, text: '', secret: true }])[0]!.values).toEqual({});
  });
});

describe('redaction of Secret values', () => {
  it("blanks the Secret layers' strings (longest first) and leaves the others", () => {
    const layers = valuesFromLayers([
      { ref, text: 'password: hunter2-long\nuser: ab\npin: 123456\nnested: {list: [hunter2]}\n', secret: true },
      { ref: 'configmap ns/c key values.yaml', text: 'host: public-host\n', secret: false },
    ]);
    const secrets = secretStrings(layers);
    expect(secrets).toEqual(['hunter2-long', 'hunter2', '123456']);
    expect(redact("at '/password': 'hunter2-long' does not match; pin 123456; host public-host; user ab", secrets)).toBe(
      "at '/password': '<redacted>' does not match; pin <redacted>; host public-host; user ab",
    );
  });
});
