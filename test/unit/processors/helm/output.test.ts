import { describe, expect, it } from 'vitest';
import { parseHelmOutput, splitHelmOutput } from '../../../../src/processors/helm/output.ts';

const out = [
  '---',
  '# Source: c/crds/a.yaml',
  'apiVersion: v1',
  'kind: ConfigMap',
  'metadata: { name: a }',
  '---',
  'apiVersion: v1',
  'kind: ConfigMap',
  'metadata: { name: a2 }',
  '---',
  '# Source: c/templates/b.yaml',
  'apiVersion: v1',
  'kind: ConfigMap',
  'metadata:',
  '  name: b',
  'data:',
  '  mode: 0755',
  '  on: yes',
  '',
].join('\n');

describe('helm output', () => {
  it('cuts at Source headers, keeping multi-document crds/ files together', () => {
    expect(splitHelmOutput(out).map((p) => p.source)).toEqual(['c/crds/a.yaml', 'c/templates/b.yaml']);
  });

  it('parses the way kubectl reads YAML and remembers each template', async () => {
    const r = await parseHelmOutput(out, 'c-1.0.0');
    expect(r.errors).toEqual([]);
    expect(r.objects.map((o) => [o.object.metadata.name, o.file])).toEqual([
      ['a', 'c/crds/a.yaml'],
      ['a2', 'c/crds/a.yaml'],
      ['b', 'c/templates/b.yaml'],
    ]);
    expect(r.objects[2]?.object['data']).toEqual({ mode: 493, true: true });
  });

  it('collects documents that are not objects as errors naming the template', async () => {
    const r = await parseHelmOutput('---\n# Source: c/templates/x.yaml\njust a string\n', 'c-1.0.0');
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.subject).toContain('c/templates/x.yaml');
  });
});
