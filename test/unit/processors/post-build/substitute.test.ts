/**
 * spec.postBuild's substitution (src/processors/post-build/substitute.ts): Flux's documented
 * examples (testdata/post-build/flux-docs, origin and license in its README) give the documented
 * result; then the rules one by one — variable order, strategy, names, the opt-out, what lands as
 * YAML — and the bad and hostile inputs: a clear error naming the object, field and variable,
 * never a value, within bounded work.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { readManifestText } from '../../../../src/processors/manifest.ts';
import { toBytes } from '../../../../src/processors/post-build/go-text.ts';
import { mergeVariables, substituteObjects, type PostBuildOptions } from '../../../../src/processors/post-build/substitute.ts';
import { HoistError } from '../../../../src/util/errors.ts';

const DOCS = join(import.meta.dirname, '../../../../testdata/post-build/flux-docs');

function objects(text: string): KubeObject[] {
  return readManifestText(text, 'test.yaml').objects.map((o) => o.object);
}

function vars(inline: Record<string, string>, ...from: Array<Record<string, string>>): PostBuildOptions['variables'] {
  return mergeVariables([
    ...from.map((data, i) => ({ from: `substituteFrom[${i}] configmap ns/vars-${i}`, data: new Map(Object.entries(data).map(([k, v]) => [k, toBytes(v)])) })),
    { from: 'substitute', data: new Map(Object.entries(inline).map(([k, v]) => [k, toBytes(v)])) },
  ]);
}

async function run(text: string, inline: Record<string, string>, extra: Partial<PostBuildOptions> = {}): Promise<KubeObject[]> {
  return substituteObjects(objects(text), { variables: vars(inline), sliceMs: 0, ...extra });
}

async function failure(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(HoistError);
    return e as HoistError;
  }
  throw new Error('expected a failure');
}

describe('Flux documentation examples', () => {
  it.each(readdirSync(DOCS))('%s gives the documented result', async (name) => {
    const dir = join(DOCS, name);
    const postBuild = parse(readFileSync(join(dir, 'post-build.yaml'), 'utf8')) as { substitute: Record<string, string> };
    const out = await run(readFileSync(join(dir, 'input.yaml'), 'utf8'), postBuild.substitute);
    expect(out).toEqual(objects(readFileSync(join(dir, 'expected.yaml'), 'utf8')));
  });
});

const CM = (data: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns\ndata:\n${data}\n`;

describe('variables', () => {
  it('substituteFrom entries in order, a later one overriding, and substitute over them all; newlines removed', async () => {
    const variables = vars({ c: 'inline' }, { a: 'first', b: 'first', c: 'first' }, { b: 'second', c: 'second', d: 'multi\nline\n' });
    const [out] = await substituteObjects(objects(CM('  a: ${a}\n  b: ${b}\n  c: ${c}\n  d: ${d}')), { variables, sliceMs: 0 });
    expect(out!['data']).toEqual({ a: 'first', b: 'second', c: 'inline', d: 'multiline' });
  });

  it('without any variable nothing is substituted (WithVariables), with Always the defaults are', async () => {
    const text = CM('  a: ${a:=fallback}\n  b: ${undefined_is_fine_here}');
    expect((await run(text, {}))[0]!['data']).toEqual({ a: '${a:=fallback}', b: '${undefined_is_fine_here}' });
    const err = await failure(run(text, {}, { strategy: 'Always' }));
    expect(err.code).toBe('variable-not-set');
    expect((await run(CM('  a: ${a:=fallback}'), {}, { strategy: 'Always' }))[0]!['data']).toEqual({ a: 'fallback' });
  });

  it('a name Flux refuses fails naming it and where it came from', async () => {
    const variables = vars({}, { 'cluster.name': 'x' });
    const err = await failure(substituteObjects(objects(CM('  a: ${a:=1}')), { variables, sliceMs: 0 }));
    expect(err.code).toBe('invalid-variable-name');
    expect(err.stage).toBe('process');
    expect(err.terminal).toBe(true);
    expect(err.message).toContain('"cluster.name" (substituteFrom[0] configmap ns/vars-0) is invalid');
  });

  it('a value lands as YAML text: numbers, booleans and null change type, quoted in the manifest or not', async () => {
    // the manifest's quotes are gone once it is parsed: kustomize writes the string "${n}" plain
    const [out] = await run(CM('  num: ${n}\n  quoted: "${n}"\n  bool: ${b}\n  nil: ${z}\n  str: x-${n}\n  kept: ${q}${n}${q}'), {
      n: '3',
      b: 'yes',
      z: '~',
      q: '"',
    });
    expect(out!['data']).toEqual({ num: 3, quoted: 3, bool: true, nil: null, str: 'x-3', kept: '3' });
  });

  it('a value is substituted once: a value holding ${other} stays as written', async () => {
    const [out] = await run(CM('  a: ${a}'), { a: '$${b} ${b}', b: 'never' });
    expect(out!['data']).toEqual({ a: '$${b} ${b}' });
  });

  it('keys, names and namespaces are substituted too, before the namespace is assigned', async () => {
    const [out] = await run('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-${env}\n  namespace: ${ns}\ndata:\n  ${key}: v\n', {
      env: 'prod',
      ns: 'shop',
      key: 'k',
    });
    expect(out!.metadata).toEqual({ name: 'app-prod', namespace: 'shop' });
    expect(out!['data']).toEqual({ k: 'v' });
  });

  it('objects without a `$` are returned as they are', async () => {
    const input = objects(CM('  a: b'));
    const out = await substituteObjects(input, { variables: vars({ a: '1' }), sliceMs: 0 });
    expect(out[0]).toBe(input[0]);
  });
});

describe('bad input: a clear error, never a value', () => {
  it('${var} without a value names the object, the field and the variable', async () => {
    const err = await failure(
      run('apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  replicas: ${replicas}\n', { other: 'x' }),
    );
    expect(err.code).toBe('variable-not-set');
    expect(err.subject).toBe('apps/v1 Deployment shop/web');
    expect(err.message).toBe('post-build substitution: apps/v1 Deployment shop/web: spec.replicas: variable "replicas" is not set');
  });

  it('${var:?message} fails with the message when the variable is unset or empty (Hoist: as a shell does)', async () => {
    const text = CM('  region: ${cluster_region:?set cluster_region in the cluster-vars ConfigMap}');
    for (const inline of [{ other: 'x' }, { cluster_region: '' }] as Array<Record<string, string>>) {
      const err = await failure(run(text, inline));
      expect(err.code).toBe('variable-not-set');
      expect(err.message).toContain('data.region: variable "cluster_region" is not set: set cluster_region in the cluster-vars ConfigMap');
    }
    expect((await run(text, { cluster_region: 'eu' }))[0]!['data']).toEqual({ region: 'eu' });
    // `?` without the colon does not parse, in Flux's envsubst too
    expect((await failure(run(CM('  r: x${r?unset}'), { r: '' }))).message).toContain('data.r: missing closing brace');
  });

  it('every object that fails is named, in one error', async () => {
    const text = `${CM('  a: ${missing_a}')}---\n${CM('  b: ${missing_b}').replace('name: c', 'name: d')}`;
    const err = await failure(run(text, { x: '1' }));
    expect(err.message).toContain('2 problems');
    expect(err.message).toContain('v1 ConfigMap ns/c: data.a: variable "missing_a" is not set');
    expect(err.message).toContain('v1 ConfigMap ns/d: data.b: variable "missing_b" is not set');
  });

  it('a ${ that does not parse names the field and shows the original text near it', async () => {
    const err = await failure(run(CM('  a: ${not closed'), { x: '1' }));
    expect(err.code).toBe('substitution-failed');
    expect(err.message).toMatch(/data\.a: missing closing brace near ".*\$\{not closed/);
  });

  it('a value that breaks the YAML is reported by field, without the text (it may be a Secret)', async () => {
    const secret = 'hunter2: oops';
    const err = await failure(run(CM('  a: ${pw}'), { pw: secret }));
    expect(err.code).toBe('substitution-failed');
    expect(err.message).toBe('post-build substitution: v1 ConfigMap ns/c: the substituted object is not valid YAML at data.a');
    expect(err.message).not.toContain('hunter2');
  });

  it('a problem in a string holding a decrypted value (SOPS) names the field, not the text', async () => {
    const decrypted = 'pw-${never-shown';
    const text = `${CM(`  password: '${decrypted}'`)}---\n${CM('  other: ${missing_var}').replace('name: c', 'name: d')}`;
    const err = await failure(run(text, { x: '1' }, { sensitive: [decrypted] }));
    expect(err.message).toContain('data.password: an expression does not parse (its text is not shown: it holds a decrypted value)');
    expect(err.message).not.toContain('never-shown');
    // elsewhere the manifest's own text is still quoted
    expect(err.message).toContain('data.other: variable "missing_var" is not set');
  });

  it('an object that loses its name, or collides with another, is refused', async () => {
    const lost = await failure(run(CM('  a: b').replace('name: c', 'name: ${name}'), { name: '' }));
    expect(lost.message).toContain('after substitution, v1 ConfigMap: missing metadata.name');
    const text = `${CM('  a: b').replace('name: c', 'name: ${x}')}---\n${CM('  a: b').replace('name: c', 'name: ${y}')}`;
    const dup = await failure(run(text, { x: 'same', y: 'same' }));
    expect(dup.code).toBe('duplicate-object');
  });
});

describe('hostile input is refused within bounded work', () => {
  it('nesting deeper than 32 levels', async () => {
    const deep = `${'${a:='.repeat(10_000)}x${'}'.repeat(10_000)}`;
    const err = await failure(run(CM(`  a: '${deep}'`), { b: '1' }));
    expect(err.code).toBe('substitution-failed');
    expect(err.message).toContain('nested too deep');
    // 32 is fine
    const ok = `${'${a:='.repeat(32)}x${'}'.repeat(32)}`;
    expect((await run(CM(`  a: '${ok}'`), { b: '1' }))[0]!['data']).toEqual({ a: 'x' });
  });

  it('a value repeated past the size limit', async () => {
    const many = Array.from({ length: 200 }, (_, i) => `  k${i}: \${big}`).join('\n');
    const err = await failure(run(CM(many), { big: 'x'.repeat(100_000) }, { limits: { objectBytes: 1024 * 1024 } }));
    expect(err.code).toBe('substitution-budget');
    expect(err.message).toContain('over the limit of 1 MiB');
  });

  it('a replacement that would multiply a value is refused before it is built', async () => {
    const err = await failure(run(CM('  a: ${big//x/${big}}'), { big: 'x'.repeat(100_000) }));
    expect(err.code).toBe('substitution-budget');
  });

  it('a pattern of many stars over a long value', async () => {
    const err = await failure(run(CM('  a: ${v##*a*a*a*a*b}'), { v: 'a'.repeat(20_000) }, { limits: { steps: 1_000_000 } }));
    expect(err.code).toBe('substitution-budget');
    expect(err.message).toContain('pattern matching took over 1000000 steps');
  });
});
