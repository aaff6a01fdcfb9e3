/**
 * CRD upgrade safety rules on pairs of CRDs: each breaking change class is refused with a
 * message naming the CRD, version, property and rule; compatible changes pass.
 */
import { describe, expect, it } from 'vitest';
import { crdUpgradeProblems, describeCrdProblem } from '../../../src/apply/crd-safety.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

type Schema = Record<string, any>;
interface Version {
  name: string;
  served?: boolean;
  storage?: boolean;
  schema: Schema;
}

const SPEC: Schema = {
  type: 'object',
  required: ['size'],
  properties: {
    size: { type: 'integer', minimum: 1, maximum: 10 },
    mode: { type: 'string', enum: ['Fast', 'Safe'], maxLength: 16 },
    name: { type: 'string', minLength: 1 },
    tags: { type: 'array', maxItems: 8, items: { type: 'string' } },
    labels: { type: 'object', maxProperties: 4, additionalProperties: { type: 'string' } },
    nested: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'object', properties: { c: { type: 'string' } } } } },
  },
};

function crd(versions: Version[], opts: { scope?: string; storedVersions?: string[] } = {}): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: opts.scope ?? 'Namespaced',
      names: { kind: 'Widget', plural: 'widgets' },
      versions: versions.map((v) => ({
        name: v.name,
        served: v.served ?? true,
        storage: v.storage ?? v.name === 'v1',
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: v.schema } } },
      })),
    },
    ...(opts.storedVersions ? { status: { storedVersions: opts.storedVersions } } : {}),
  };
}

/** the v1 spec schema with `change` applied to a copy */
function changed(change: (s: Schema) => void): Schema {
  const s = structuredClone(SPEC);
  change(s);
  return s;
}

const OLD = crd([{ name: 'v1', schema: SPEC }], { storedVersions: ['v1'] });
const v1 = (schema: Schema): KubeObject => crd([{ name: 'v1', schema }]);

const refused: Array<[string, KubeObject, string[]]> = [
  ['scope change', crd([{ name: 'v1', schema: SPEC }], { scope: 'Cluster' }), ['CRD widgets.example.com: scope: scope changed "Namespaced" -> "Cluster"']],
  [
    'stored version removed',
    crd([{ name: 'v2', schema: SPEC, storage: true }]),
    ['CRD widgets.example.com, version v1: storedVersionRemoval: stored version v1 removed: objects stored as v1 could no longer be read'],
  ],
  ['new required field', v1(changed((s) => s.required.push('mode'))), ['CRD widgets.example.com, version v1, ^.spec: required: new required fields "mode"']],
  [
    'new required field that is new too',
    v1(
      changed((s) => {
        s.properties.color = { type: 'string' };
        s.required.push('color');
      }),
    ),
    ['CRD widgets.example.com, version v1, ^.spec: required: new required fields "color"'],
  ],
  [
    'enum narrowed',
    v1(changed((s) => (s.properties.mode.enum = ['Fast']))),
    ['CRD widgets.example.com, version v1, ^.spec.mode: enum: allowed enum values removed: "Safe"'],
  ],
  [
    'enum added to a free field',
    v1(changed((s) => (s.properties.name.enum = ['a', 'b']))),
    ['CRD widgets.example.com, version v1, ^.spec.name: enum: enum constraint added where there was none: "a", "b"'],
  ],
  [
    'type change',
    v1(changed((s) => (s.properties.size = { type: 'string' }))),
    ['CRD widgets.example.com, version v1, ^.spec.size: type: type changed "integer" -> "string"'],
  ],
  [
    'item type change',
    v1(changed((s) => (s.properties.tags.items.type = 'integer'))),
    ['CRD widgets.example.com, version v1, ^.spec.tags.items: type: type changed "string" -> "integer"'],
  ],
  [
    'maximum lowered',
    v1(changed((s) => (s.properties.size.maximum = 5))),
    ['CRD widgets.example.com, version v1, ^.spec.size: maximum: maximum lowered 10 -> 5'],
  ],
  ['minimum raised', v1(changed((s) => (s.properties.size.minimum = 2))), ['CRD widgets.example.com, version v1, ^.spec.size: minimum: minimum raised 1 -> 2']],
  [
    'maxLength lowered',
    v1(changed((s) => (s.properties.mode.maxLength = 4))),
    ['CRD widgets.example.com, version v1, ^.spec.mode: maxLength: maxLength lowered 16 -> 4'],
  ],
  [
    'maxLength added',
    v1(changed((s) => (s.properties.name.maxLength = 63))),
    ['CRD widgets.example.com, version v1, ^.spec.name: maxLength: maxLength 63 added where there was none'],
  ],
  [
    'minLength raised',
    v1(changed((s) => (s.properties.name.minLength = 3))),
    ['CRD widgets.example.com, version v1, ^.spec.name: minLength: minLength raised 1 -> 3'],
  ],
  [
    'maxItems lowered',
    v1(changed((s) => (s.properties.tags.maxItems = 2))),
    ['CRD widgets.example.com, version v1, ^.spec.tags: maxItems: maxItems lowered 8 -> 2'],
  ],
  [
    'minItems added',
    v1(changed((s) => (s.properties.tags.minItems = 1))),
    ['CRD widgets.example.com, version v1, ^.spec.tags: minItems: minItems 1 added where there was none'],
  ],
  [
    'maxProperties lowered',
    v1(changed((s) => (s.properties.labels.maxProperties = 2))),
    ['CRD widgets.example.com, version v1, ^.spec.labels: maxProperties: maxProperties lowered 4 -> 2'],
  ],
  [
    'minProperties added',
    v1(changed((s) => (s.properties.labels.minProperties = 1))),
    ['CRD widgets.example.com, version v1, ^.spec.labels: minProperties: minProperties 1 added where there was none'],
  ],
  [
    'field removed (its children are not listed again)',
    v1(changed((s) => delete s.properties.nested.properties.b)),
    ['CRD widgets.example.com, version v1, ^.spec.nested.b: existingFieldRemoval: removed field'],
  ],
  [
    'map value schema removed',
    v1(changed((s) => delete s.properties.labels.additionalProperties)),
    ['CRD widgets.example.com, version v1, ^.spec.labels.additionalProperties: existingFieldRemoval: removed field'],
  ],
];

const compatible: Array<[string, KubeObject]> = [
  ['the same CRD', v1(SPEC)],
  ['new optional field', v1(changed((s) => (s.properties.color = { type: 'string', enum: ['red'], maxLength: 8, minLength: 1 })))],
  [
    'new optional object with required members of its own',
    v1(changed((s) => (s.properties.extra = { type: 'object', required: ['x'], properties: { x: { type: 'string' } } }))),
  ],
  ['enum widened', v1(changed((s) => s.properties.mode.enum.push('Balanced')))],
  ['enum constraint removed', v1(changed((s) => delete s.properties.mode.enum))],
  ['description changed', v1(changed((s) => (s.properties.size.description = 'how many')))],
  ['required field made optional', v1(changed((s) => (s.required = [])))],
  [
    'limits relaxed',
    v1(
      changed((s) => {
        s.properties.size.maximum = 100;
        s.properties.size.minimum = 0;
        s.properties.tags.maxItems = 16;
        delete s.properties.name.minLength;
      }),
    ),
  ],
  [
    'typed schema replaced by an untyped one that keeps unknown fields',
    v1(changed((s) => (s.properties.tags = { 'x-kubernetes-preserve-unknown-fields': true, maxItems: 8 }))),
  ],
  [
    'new version',
    crd([
      { name: 'v1', schema: SPEC },
      { name: 'v2', schema: changed((s) => (s.required = ['size', 'mode'])), storage: false },
    ]),
  ],
];

describe('CRD upgrade safety', () => {
  for (const [what, next, messages] of refused) {
    it(`refuses: ${what}`, () => {
      expect(crdUpgradeProblems(OLD, next).map(describeCrdProblem)).toEqual(messages);
    });
  }
  for (const [what, next] of compatible) {
    it(`lets through: ${what}`, () => {
      expect(crdUpgradeProblems(OLD, next)).toEqual([]);
    });
  }

  it('removing a served version is refused; removing an unserved one that is not stored is fine', () => {
    const two = crd(
      [
        { name: 'v1alpha1', schema: SPEC, storage: false },
        { name: 'v1', schema: SPEC },
      ],
      { storedVersions: ['v1'] },
    );
    expect(crdUpgradeProblems(two, v1(SPEC)).map(describeCrdProblem)).toEqual([
      'CRD widgets.example.com, version v1alpha1: servedVersionRemoval: served version v1alpha1 removed: clients using it would break',
    ]);
    const unserving = crd([
      { name: 'v1alpha1', schema: SPEC, served: false, storage: false },
      { name: 'v1', schema: SPEC },
    ]);
    expect(crdUpgradeProblems(two, unserving).map((p) => p.detail)).toEqual(['served version v1alpha1 no longer served: clients using it would break']);
    const retired = crd(
      [
        { name: 'v1alpha1', schema: SPEC, served: false, storage: false },
        { name: 'v1', schema: SPEC },
      ],
      { storedVersions: ['v1'] },
    );
    expect(crdUpgradeProblems(retired, v1(SPEC))).toEqual([]);
  });

  it('a version still stored is refused once, by storedVersionRemoval', () => {
    const stored = crd(
      [
        { name: 'v1alpha1', schema: SPEC, storage: false },
        { name: 'v1', schema: SPEC },
      ],
      { storedVersions: ['v1alpha1', 'v1'] },
    );
    expect(crdUpgradeProblems(stored, v1(SPEC)).map((p) => p.rule)).toEqual(['storedVersionRemoval']);
  });

  it('reports every problem of a change at once, per version', () => {
    const both = crd(
      [
        { name: 'v1', schema: SPEC },
        { name: 'v2', schema: SPEC, storage: false },
      ],
      { storedVersions: ['v1'] },
    );
    const next = crd(
      [
        { name: 'v1', schema: changed((s) => (s.properties.size.maximum = 5)) },
        { name: 'v2', schema: changed((s) => delete s.properties.mode), storage: false },
      ],
      { scope: 'Cluster' },
    );
    expect(crdUpgradeProblems(both, next).map(describeCrdProblem)).toEqual([
      'CRD widgets.example.com: scope: scope changed "Namespaced" -> "Cluster"',
      'CRD widgets.example.com, version v1, ^.spec.size: maximum: maximum lowered 10 -> 5',
      'CRD widgets.example.com, version v2, ^.spec.mode: existingFieldRemoval: removed field',
    ]);
  });
});
