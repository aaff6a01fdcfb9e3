/**
 * Hoist's SOPS decryption (src/processors/sops) against the real sops (built from its Go module,
 * scripts/ensure-tools.sh): files encrypted by `sops -e` for keys made by `age-keygen`, and for
 * each the documents Hoist decrypts equal what reading `sops -d`'s output gives (the manifest
 * reader, kubectl's rules). Strings, ints, floats, bools, nulls, timestamps, nested maps, lists,
 * anchors and merge keys, multi-document streams, JSON; every rule sops has for what to encrypt
 * (default, encrypted_regex, unencrypted_regex, encrypted_suffix, unencrypted_suffix,
 * mac_only_encrypted); X25519 and post-quantum keys; a Secret with data and stringData rendered by
 * the plain processor. Then what sops refuses, Hoist refuses too, with its own message naming the
 * file and the keys tried (never a value): a wrong key, no key, a tampered file.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { ProcessCode } from '../../../../src/processors/errors.ts';
import { createKustomizeProcessor } from '../../../../src/processors/kustomize/kustomize-processor.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import { byKey, helmTemplateReference } from '../helm/reference.ts';
import { cp } from 'node:fs/promises';
import { renderPlain } from '../../../../src/processors/plain.ts';
import { parseAgeKeyFile, type DecryptionKeys } from '../../../../src/processors/sops/age-keys.ts';
import { decryptIfEncrypted } from '../../../../src/processors/sops/decryptor.ts';
import { yamlBudget } from '../../../../src/processors/yaml/budget.ts';
import { parseManifestStream } from '../../../../src/processors/yaml/stream.ts';
import { failure } from '../../../support/failure.ts';
import { sopsCli, type AgeKey, type Sops } from '../../../support/sops.ts';

let work: string;
let sops: Sops;
let key: AgeKey;
let other: AgeKey;
let keys: DecryptionKeys;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'hoist-sops-'));
  sops = sopsCli(work);
  [key, other] = await Promise.all([sops.keygen('cluster'), sops.keygen('other')]);
  keys = { from: 'secret team/sops-age', identities: await parseAgeKeyFile(key.text, 'secret team/sops-age key age.agekey') };
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  annotations:
    rotated: 2024-05-01
    owner: "team-a"
  labels:
    tier: "backend"
type: Opaque
data:
  password: aHVudGVyMi1zM2NyM3Q=
  token: dG9rZW4tdmFsdWUtNDI=
stringData:
  user: admin-user
  dsn: "postgres://admin:hunter2@db:5432/shop?sslmode=require"
  port: 5432
  ratio: 0.75
  enabled: true
  empty: ""
  nothing: null
  yes-string: "yes"
  octal: 0755
  hex: 0x1F
  sep: 1_000
  exp: 1e3
  date: 2001-12-14
  stamp: 2001-12-14 21:59:43.10
  multiline: |
    line one
    line two
  folded: >
    folded
    text
  unicode: "pässwörd ✓"
  list: [one, 2, 3.5, false, null]
  nested:
    deeper:
      key: value-in-depth
    items:
      - name: first
        value: v1
      - name: second
        value: 2
`;

const CONFIG = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  mode: production
  retries: "3"
  url_unencrypted: https://example.test/plain
  secret_plain: shown-as-is
  api_secret: hidden-value
`;

const ANCHORS = `apiVersion: v1
kind: ConfigMap
metadata:
  name: anchors
base: &base
  region: eu-west-1
  replicas: 3
data:
  copy: *base
  merged:
    <<: *base
    replicas: 5
  many:
    <<: [*base, {zone: b}]
    own: yes
`;

const STREAM = `apiVersion: v1
kind: Secret
metadata:
  name: one
stringData:
  a: first-secret
---
apiVersion: v1
kind: Secret
metadata:
  name: two
stringData:
  b: second-secret
  n: 12
`;

const JSON_SECRET = `{
  "apiVersion": "v1",
  "kind": "Secret",
  "metadata": {"name": "from-json", "labels": {"2": "two", "1": "one"}},
  "stringData": {"k": "json-secret-value", "n": 42, "f": 1.5, "big": 12345678901, "b": false, "z": null, "e": 1e2, "list": [1, "x", {"y": true}]}
}
`;

interface Case {
  name: string;
  text: string;
  flags?: string[];
  file?: string;
}

const CASES: Case[] = [
  { name: 'a Secret, data and stringData encrypted (encrypted_regex)', text: SECRET, flags: ['--encrypted-regex', '^(data|stringData)$'] },
  { name: 'a Secret, everything encrypted (the default rule)', text: SECRET },
  { name: 'a Secret, metadata left in the clear (unencrypted_regex)', text: SECRET, flags: ['--unencrypted-regex', '^(apiVersion|kind|metadata|type)$'] },
  {
    name: 'a Secret, MAC over the encrypted values only (mac_only_encrypted)',
    text: SECRET,
    flags: ['--encrypted-regex', '^(data|stringData)$', '--mac-only-encrypted'],
  },
  { name: 'a ConfigMap, the default _unencrypted suffix', text: CONFIG },
  { name: 'a ConfigMap, encrypted_suffix', text: CONFIG, flags: ['--encrypted-suffix', '_secret'] },
  { name: 'a ConfigMap, a custom unencrypted_suffix', text: CONFIG, flags: ['--unencrypted-suffix', '_plain'] },
  { name: 'anchors, aliases and merge keys', text: ANCHORS },
  { name: 'anchors, data only (encrypted_regex)', text: ANCHORS, flags: ['--encrypted-regex', '^data$'] },
  { name: 'a multi-document stream', text: STREAM, flags: ['--encrypted-regex', '^stringData$'] },
  { name: 'a JSON file', text: JSON_SECRET, file: 'secret.json' },
  { name: 'a JSON file, stringData only', text: JSON_SECRET, file: 'secret.json', flags: ['--encrypted-regex', '^stringData$'] },
];

/** what reading `sops -d`'s output gives: the manifest reader's documents */
function reference(plaintext: string, file: string): unknown[] {
  return parseManifestStream(plaintext, file).documents.map((d) => d.value);
}

describe('Hoist decrypts as sops -d does', () => {
  it.each(CASES)('$name', async (c) => {
    const file = c.file ?? 'secret.yaml';
    const encrypted = await sops.encrypt(c.text, [key], { flags: c.flags ?? [], name: file });
    expect(encrypted).toContain('ENC[AES256_GCM,');
    const expected = reference(await sops.decrypt(encrypted, key, file), file);
    const out = await decryptIfEncrypted(encrypted, file, keys, yamlBudget());
    expect(out?.documents).toEqual(expected);
    expect(expected.length).toBeGreaterThan(0);
  });

  it('a post-quantum hybrid key (age-keygen -pq), and a file for two recipients opened by the second', async () => {
    const pq = await sops.keygen('pq', true);
    expect(pq.recipient.startsWith('age1pq1')).toBe(true);
    const pqKeys = { from: 'secret team/pq', identities: await parseAgeKeyFile(pq.text, 'secret team/pq key pq.agekey') };
    const encrypted = await sops.encrypt(SECRET, [other, pq], { flags: ['--encrypted-regex', '^stringData$'] });
    const out = await decryptIfEncrypted(encrypted, 'secret.yaml', pqKeys, yamlBudget());
    expect(out?.documents).toEqual(reference(await sops.decrypt(encrypted, pq, 'secret.yaml'), 'secret.yaml'));
  });

  it('the plain processor renders an encrypted tree as the tree sops -d prints', async () => {
    const enc = path.join(work, 'enc-tree');
    const dec = path.join(work, 'dec-tree');
    await mkdir(path.join(enc, 'app'), { recursive: true });
    await mkdir(path.join(dec, 'app'), { recursive: true });
    const files: Array<[string, string, string[]]> = [
      ['app/secret.yaml', SECRET, ['--encrypted-regex', '^(data|stringData)$']],
      ['app/stream.yaml', STREAM, []],
      ['config.json', JSON_SECRET, []],
    ];
    for (const [rel, text, flags] of files) {
      const encrypted = await sops.encrypt(text, [key], { flags, name: path.basename(rel) });
      await writeFile(path.join(enc, rel), encrypted);
      await writeFile(path.join(dec, rel), await sops.decrypt(encrypted, key, path.basename(rel)));
    }
    // an ordinary manifest beside them is read as it is
    const plain = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  on: yes\n';
    await writeFile(path.join(enc, 'plain.yaml'), plain);
    await writeFile(path.join(dec, 'plain.yaml'), plain);
    const got = await renderPlain(enc, { installNamespace: 'shop', decryption: keys });
    const want = await renderPlain(dec, { installNamespace: 'shop' });
    expect(got.objects).toEqual(want.objects);
    expect(got.objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Secret/db', 'Secret/one', 'Secret/two', 'Secret/from-json', 'ConfigMap/plain']);
    const secret = got.objects[0] as unknown as { data: Record<string, string>; stringData: Record<string, unknown> };
    expect(Buffer.from(secret.data['password']!, 'base64').toString()).toBe('hunter2-s3cr3t');
    expect(secret.stringData['user']).toBe('admin-user');
    expect(got.sensitive).toEqual(
      expect.arrayContaining(['admin-user', 'aHVudGVyMi1zM2NyM3Q=', 'postgres://admin:hunter2@db:5432/shop?sslmode=require', '5432']),
    );
    expect(got.objects.some((o) => 'sops' in o)).toBe(false);
  });
});

describe('kustomize builds the encrypted files, Hoist decrypts what it rendered', () => {
  const kustomize = createKustomizeProcessor({ kustomizeBinary: toolPath('kustomize') });
  const BASE_KUSTOMIZATION = 'resources:\n  - secret.yaml\n  - config.yaml\n';
  const OVERLAY = 'namePrefix: prod-\nnamespace: prod\nlabels:\n  - pairs:\n      env: prod\nresources:\n  - ../../base\n';

  async function trees(secretFlags: string[]): Promise<{ enc: string; dec: string }> {
    const root = await mkdtemp(path.join(work, 'kustomize-'));
    const out = { enc: path.join(root, 'enc'), dec: path.join(root, 'dec') };
    const secret = await sops.encrypt(SECRET, [key], { flags: secretFlags });
    const config = await sops.encrypt(CONFIG, [key], { flags: ['--encrypted-regex', '^data$'], name: 'config.yaml' });
    for (const [tree, s, c] of [
      [out.enc, secret, config],
      [out.dec, await sops.decrypt(secret, key), await sops.decrypt(config, key, 'config.yaml')],
    ] as const) {
      await mkdir(path.join(tree, 'base'), { recursive: true });
      await mkdir(path.join(tree, 'overlays/prod'), { recursive: true });
      await writeFile(path.join(tree, 'base/kustomization.yaml'), BASE_KUSTOMIZATION);
      await writeFile(path.join(tree, 'base/secret.yaml'), s);
      await writeFile(path.join(tree, 'base/config.yaml'), c);
      await writeFile(path.join(tree, 'overlays/prod/kustomization.yaml'), OVERLAY);
    }
    return out;
  }

  it('an overlay (namePrefix, namespace, labels) over encrypted Secrets and ConfigMaps equals kustomize build of the sops -d tree', async () => {
    const { enc, dec } = await trees(['--encrypted-regex', '^(data|stringData)$']);
    const config = { kustomize: { path: 'overlays/prod' } };
    const got = await kustomize.render(enc, config, { name: 'shop', decryption: keys });
    const want = await kustomize.render(dec, config, { name: 'shop' });
    expect(got.objects).toEqual(want.objects);
    expect(got.objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['ConfigMap prod/prod-app', 'Secret prod/prod-db']);
    expect(got.objects.some((o) => 'sops' in o)).toBe(false);
    expect(got.sensitive).toEqual(expect.arrayContaining(['admin-user', 'hidden-value']));
  });

  it('without spec.decryption, with a wrong key, or with a tampered file: refused naming the file', async () => {
    const { enc } = await trees(['--encrypted-regex', '^(data|stringData)$']);
    const config = { kustomize: { path: 'overlays/prod' } };
    const none = await failure(kustomize.render(enc, config, { name: 'shop' }));
    expect(none.code).toBe(ProcessCode.DecryptionKeyMissing);
    expect(none.message).toMatch(/^2 problems: base\/config\.yaml: sops: the file is SOPS-encrypted .* spec\.decryption is not set/);
    const wrong = { from: 'secret team/other', identities: await parseAgeKeyFile(other.text, 'secret team/other key age.agekey') };
    expect((await failure(kustomize.render(enc, config, { name: 'shop', decryption: wrong }))).code).toBe(ProcessCode.DecryptionKeyMissing);
    const file = path.join(enc, 'base/secret.yaml');
    const { readFile } = await import('node:fs/promises');
    await writeFile(file, (await readFile(file, 'utf8')).replace('name: db', 'name: dbx'));
    const tampered = await failure(kustomize.render(enc, config, { name: 'shop', decryption: keys }));
    expect(tampered.code).toBe(ProcessCode.MacMismatch);
    expect(tampered.subject).toBe('base/secret.yaml');
  });
});

describe('helm reads an encrypted values file decrypted', () => {
  const helmBin = toolPath('helm');
  const helm = createHelmProcessor({ helmBinary: helmBin });
  const FIXTURE = path.join(import.meta.dirname, '../helm/testdata/values-layers');
  const VALUES = 'replicas: 4\ndb:\n  password: helm-db-s3cret\n  port: 7432\n';

  it('equals helm template with the sops -d file, and the decrypted values are sensitive', async () => {
    const tree = await mkdtemp(path.join(work, 'helm-'));
    const chart = path.join(tree, 'values-layers');
    await cp(FIXTURE, chart, { recursive: true });
    const encrypted = await sops.encrypt(VALUES, [key], { flags: ['--encrypted-regex', '^db$'], name: 'secrets.yaml' });
    await writeFile(path.join(chart, 'secrets.yaml'), encrypted);
    const decrypted = path.join(work, 'helm-secrets.dec.yaml');
    await writeFile(decrypted, await sops.decrypt(encrypted, key, 'secrets.yaml'));
    const config = { helm: { valuesFiles: ['values-prod.yaml', 'secrets.yaml'] } };
    const out = await helm.render(tree, config, { name: 'rel', installNamespace: 'apps', decryption: keys });
    const reference = helmTemplateReference(helmBin, {
      release: 'rel',
      chartDir: chart,
      namespace: 'apps',
      valuesFiles: [path.join(chart, 'values-prod.yaml'), decrypted],
    });
    expect(byKey(out.objects)).toEqual(byKey(reference));
    expect(out.objects.find((o) => o.kind === 'Secret')).toMatchObject({ stringData: { password: 'helm-db-s3cret' } });
    expect(out.sensitive).toEqual(expect.arrayContaining(['helm-db-s3cret', '7432']));
    const none = await failure(helm.render(tree, config, { name: 'rel', installNamespace: 'apps' }));
    expect(none.code).toBe(ProcessCode.DecryptionKeyMissing);
    expect(none.subject).toBe('values-layers/secrets.yaml');
  });
});

describe('what sops refuses, Hoist refuses, naming the file and the keys (never a value)', () => {
  const SECRET_VALUES = ['admin-user', 'hunter2', 'aHVudGVyMi1zM2NyM3Q=', 'value-in-depth', 'first-secret'];
  const noValues = (message: string): void => {
    for (const v of SECRET_VALUES) expect(message).not.toContain(v);
  };
  const regex = ['--encrypted-regex', '^(data|stringData)$'];

  it('a file encrypted for another key: the recipients tried and the ones it is for', async () => {
    const encrypted = await sops.encrypt(SECRET, [other], { flags: regex });
    await expect(sops.decrypt(encrypted, key)).rejects.toThrow(/sops -d refused/);
    const e = await failure(decryptIfEncrypted(encrypted, 'app/secret.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.DecryptionKeyMissing);
    expect(e.stage).toBe('process');
    expect(e.terminal).toBe(true);
    expect(e.subject).toBe('app/secret.yaml');
    expect(e.message).toContain(key.recipient);
    expect(e.message).toContain(other.recipient);
    expect(e.message).toContain('secret team/sops-age');
    expect(e.describe()).toMatch(/^process app\/secret\.yaml: sops: no age identity of secret team\/sops-age/);
    noValues(e.describe());
  });

  it('no decryption configured, or a Secret without age identities', async () => {
    const encrypted = await sops.encrypt(SECRET, [key], { flags: regex });
    const none = await failure(decryptIfEncrypted(encrypted, 'secret.yaml', undefined, yamlBudget()));
    expect(none.code).toBe(ProcessCode.DecryptionKeyMissing);
    expect(none.message).toContain('spec.decryption is not set');
    expect(none.message).toContain(key.recipient);
    const empty = await failure(decryptIfEncrypted(encrypted, 'secret.yaml', { from: 'secret team/empty', identities: [] }, yamlBudget()));
    expect(empty.message).toContain('secret team/empty holds no age identity (*.agekey)');
  });

  it('a value edited in the clear part: MAC mismatch', async () => {
    const encrypted = await sops.encrypt(SECRET, [key], { flags: regex });
    const tampered = encrypted.replace('name: db', 'name: evil');
    expect(tampered).not.toBe(encrypted);
    await expect(sops.decrypt(tampered, key)).rejects.toThrow(/MAC mismatch/);
    const e = await failure(decryptIfEncrypted(tampered, 'secret.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.MacMismatch);
    expect(e.message).toMatch(/MAC mismatch: the file was changed after it was encrypted/);
    noValues(e.describe());
  });

  it('an encrypted value removed: MAC mismatch', async () => {
    const encrypted = await sops.encrypt(SECRET, [key], { flags: regex });
    const tampered = encrypted.replace(/\n {4}token: ENC\[[^\]]+\]/, '');
    expect(tampered).not.toBe(encrypted);
    await expect(sops.decrypt(tampered, key)).rejects.toThrow(/MAC mismatch/);
    expect((await failure(decryptIfEncrypted(tampered, 'secret.yaml', keys, yamlBudget()))).code).toBe(ProcessCode.MacMismatch);
  });

  it('an encrypted value moved to another key: it does not decrypt there', async () => {
    const encrypted = await sops.encrypt(SECRET, [key], { flags: regex });
    const password = /password: (ENC\[[^\]]+\])/.exec(encrypted)![1]!;
    const token = /token: (ENC\[[^\]]+\])/.exec(encrypted)![1]!;
    const swapped = encrypted.replace(password, 'SWAP').replace(token, password).replace('SWAP', token);
    await expect(sops.decrypt(swapped, key)).rejects.toThrow(/sops -d refused/);
    const e = await failure(decryptIfEncrypted(swapped, 'secret.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.DecryptFailed);
    expect(e.message).toMatch(/the value at data\.(password|token) does not decrypt with the data key/);
    noValues(e.describe());
  });

  it('a plaintext value put where the rules say encrypted', async () => {
    const encrypted = await sops.encrypt(SECRET, [key], { flags: regex });
    const tampered = encrypted.replace(/user: ENC\[[^\]]+\]/, 'user: injected-plain');
    await expect(sops.decrypt(tampered, key)).rejects.toThrow(/sops -d refused/);
    const e = await failure(decryptIfEncrypted(tampered, 'secret.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.DecryptFailed);
    expect(e.message).toContain('the value at stringData.user is not encrypted');
    expect(e.message).not.toContain('injected-plain');
  });

  it('the plain processor reports the file of every problem at once, and renders nothing', async () => {
    const tree = path.join(work, 'bad-tree');
    await mkdir(tree, { recursive: true });
    await writeFile(path.join(tree, 'a.yaml'), await sops.encrypt(SECRET, [other], { flags: regex }));
    const stream = await sops.encrypt(STREAM, [key], { flags: ['--encrypted-regex', '^stringData$'] });
    expect(stream).toContain('name: two');
    await writeFile(path.join(tree, 'b.yaml'), stream.replace('name: two', 'name: three'));
    const e = await failure(renderPlain(tree, { installNamespace: 'shop', decryption: keys }));
    expect(e.message).toMatch(/^2 problems: a\.yaml: sops: no age identity.*; b\.yaml: sops: MAC mismatch/);
    noValues(e.describe());
  });
});

describe('hostile encrypted files are refused within bounds', () => {
  it('an alias bomb in an encrypted file meets the YAML node budget', async () => {
    const encrypted = await sops.encrypt(CONFIG, [key]);
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      levels.push(
        `${'b'.repeat(i)}: &${'b'.repeat(i)} [${Array(10)
          .fill(`*${i === 1 ? 'a' : 'b'.repeat(i - 1)}`)
          .join(', ')}]`,
      );
    const bomb = `${levels.join('\n')}\n${encrypted}`;
    const e = await failure(decryptIfEncrypted(bomb, 'bomb.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.YamlAliasBudget);
  });

  it('more age entries than Hoist tries', async () => {
    const encrypted = await sops.encrypt(CONFIG, [other]);
    const entry = /( {8}- enc: \|[\s\S]*?recipient: age1\S+\n)/.exec(encrypted)![1]!;
    const many = encrypted.replace(entry, entry.repeat(65));
    const e = await failure(decryptIfEncrypted(many, 'many.yaml', keys, yamlBudget()));
    expect(e.code).toBe(ProcessCode.DecryptFailed);
    expect(e.message).toContain('65 age entries, more than the 64 Hoist tries');
  });
});
