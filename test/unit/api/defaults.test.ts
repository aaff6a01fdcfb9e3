import { describe, expect, it } from 'vitest';
import { bundleDeploymentCRD, type JSONSchemaProps } from '../../../api/v1alpha2/crd.ts';
import {
  DEFAULT_COLLISION_PROTECTION,
  DEFAULT_CRD_SAFETY,
  DEFAULT_DELETION_POLICY,
  DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD,
  DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS,
  DEFAULT_HEALTH_CHECK_PERIOD_SECONDS,
  DEFAULT_ON_FAILURE,
  DEFAULT_PROGRESS_DEADLINE,
  DEFAULT_REVISION_HISTORY_LIMIT,
  MIN_POLL_INTERVAL,
  MIN_POLL_INTERVAL_MS,
  parseDuration,
  withDefaults,
} from '../../../api/v1alpha2/defaults.ts';
import { DEFAULT_CA_KEY, DEFAULT_VALUES_KEY, type BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { HoistError } from '../../../src/util/errors.ts';

const minimal: BundleDeploymentSpec = {
  format: 'plain',
  sources: [{ kind: 'http', http: { url: 'https://example.com/a.tgz' } }],
};

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['1s', 1_000],
    ['1.5s', 1_500],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['2h0m5s10ms', 7_205_010],
    ['0.5h', 1_800_000],
    ['0s', 0],
    ['0.4ms', 1],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '10', 'm', '10 m', '10min', '-1s', '1d', '1.s', '.5s', '1us', '1h 30m', ' 1s'])('refuses %j', (text) => {
    expect(() => parseDuration(text, 'spec.pollInterval')).toThrow(/spec\.pollInterval .* is not a duration/);
  });

  it('throws a terminal spec error naming the field', () => {
    try {
      parseDuration('soon', 'spec.upgrade.progressDeadline');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(HoistError);
      const err = e as HoistError;
      expect(err.terminal).toBe(true);
      expect(err.stage).toBe('spec');
      expect(err.reason).toBe('InvalidSpec');
      expect(err.subject).toBe('spec.upgrade.progressDeadline');
    }
  });

  it('refuses durations beyond safe integers', () => {
    expect(() => parseDuration('99999999999999999999h')).toThrow(/too large/);
  });
});

describe('withDefaults', () => {
  it('fills every default of a minimal spec', () => {
    const d = withDefaults(minimal);
    expect(d).toEqual({
      format: 'plain',
      sources: [{ kind: 'http', http: { url: 'https://example.com/a.tgz' }, destination: '' }],
      paused: false,
      upgrade: { onFailure: 'Rollback', progressDeadline: '10m', crdSafety: 'Enforce' },
      healthChecks: [],
      revisionHistoryLimit: 3,
      collisionProtection: 'Prevent',
      deleteCRDsOnUninstall: false,
      deletionPolicy: 'Delete',
      pollIntervalMs: undefined,
      progressDeadlineMs: 600_000,
    });
  });

  it('keeps what the spec sets, including zero and false values', () => {
    const spec: BundleDeploymentSpec = {
      ...minimal,
      paused: true,
      sources: [{ kind: 'image', image: { ref: 'quay.io/a/b:v1' }, destination: 'x' }],
      pollInterval: '30s',
      upgrade: { onFailure: 'Hold', progressDeadline: '1h', crdSafety: 'None' },
      healthChecks: [{ name: 'c', match: { kind: 'Job' }, cel: 'true', periodSeconds: 1, failureThreshold: 1, initialDelaySeconds: 5 }],
      revisionHistoryLimit: 0,
      collisionProtection: 'None',
      deleteCRDsOnUninstall: true,
      deletionPolicy: 'Orphan',
    };
    const d = withDefaults(spec);
    expect(d.paused).toBe(true);
    expect(d.sources[0]?.destination).toBe('x');
    expect(d.upgrade).toEqual({ onFailure: 'Hold', progressDeadline: '1h', crdSafety: 'None' });
    expect(d.pollIntervalMs).toBe(30_000);
    expect(d.progressDeadlineMs).toBe(3_600_000);
    expect(d.healthChecks[0]).toMatchObject({ periodSeconds: 1, failureThreshold: 1, initialDelaySeconds: 5 });
    expect(d.revisionHistoryLimit).toBe(0);
    expect(d.collisionProtection).toBe('None');
    expect(d.deleteCRDsOnUninstall).toBe(true);
    expect(d.deletionPolicy).toBe('Orphan');
  });

  it('defaults a partial upgrade and health check member by member', () => {
    const d = withDefaults({
      ...minimal,
      upgrade: { onFailure: 'Hold' },
      healthChecks: [{ name: 'c', match: { name: 'x' }, condition: { type: 'Ready', status: 'True' } }],
    });
    expect(d.upgrade).toEqual({ onFailure: 'Hold', progressDeadline: '10m', crdSafety: 'Enforce' });
    expect(d.healthChecks[0]).toMatchObject({ periodSeconds: 10, failureThreshold: 3, initialDelaySeconds: 0 });
  });

  it('does not mutate its argument', () => {
    const spec: BundleDeploymentSpec = structuredClone({ ...minimal, healthChecks: [{ name: 'c', match: { kind: 'Job' }, cel: 'true' }] });
    const before = structuredClone(spec);
    withDefaults(spec);
    expect(spec).toEqual(before);
  });

  it('the CRD refuses a pollInterval under MIN_POLL_INTERVAL with the same number', () => {
    const spec = bundleDeploymentCRD().spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!['pollInterval']!;
    const rules = (spec as JSONSchemaProps & { 'x-kubernetes-validations'?: Array<{ rule: string; message?: string }> })['x-kubernetes-validations'] ?? [];
    expect(
      rules.some((r) => r.rule.includes(`duration(self) >= duration('${MIN_POLL_INTERVAL}')`) && r.message === `must be at least ${MIN_POLL_INTERVAL}`),
    ).toBe(true);
  });

  it.each([
    // [pollInterval, ms]: shorter than the minimum (stored before the CRD's rule, or under a CRD without it) counts as 10s
    ['1ms', 10_000],
    ['9.999s', 10_000],
    ['10s', 10_000],
    ['10001ms', 10_001],
    ['1h', 3_600_000],
  ] as const)('pollInterval %s polls every %d ms (at least MIN_POLL_INTERVAL)', (pollInterval, ms) => {
    expect(MIN_POLL_INTERVAL_MS).toBe(parseDuration(MIN_POLL_INTERVAL));
    expect(withDefaults({ ...minimal, pollInterval }).pollIntervalMs).toBe(ms);
  });

  it('refuses a zero or malformed pollInterval with the field name', () => {
    expect(() => withDefaults({ ...minimal, pollInterval: '0s' })).toThrow(/spec\.pollInterval "0s" must be greater than zero/);
    expect(() => withDefaults({ ...minimal, pollInterval: '5 minutes' })).toThrow(/spec\.pollInterval/);
    expect(() => withDefaults({ ...minimal, upgrade: { progressDeadline: '0m' } })).toThrow(/spec\.upgrade\.progressDeadline/);
  });
});

describe('defaults match the CRD', () => {
  // The API server applies the CRD's defaults and withDefaults applies the constants; a default
  // changed in one place only would make behaviour depend on how an object was created.
  const spec = bundleDeploymentCRD().spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
  const prop = (s: JSONSchemaProps, ...path: string[]): JSONSchemaProps =>
    path.reduce<JSONSchemaProps>((n, p) => (p === '[]' ? n.items! : n.properties![p]!), s);

  it.each([
    [['paused'], false],
    [['sources', '[]', 'destination'], ''],
    [['upgrade', 'onFailure'], DEFAULT_ON_FAILURE],
    [['upgrade', 'progressDeadline'], DEFAULT_PROGRESS_DEADLINE],
    [['upgrade', 'crdSafety'], DEFAULT_CRD_SAFETY],
    [['healthChecks', '[]', 'periodSeconds'], DEFAULT_HEALTH_CHECK_PERIOD_SECONDS],
    [['healthChecks', '[]', 'failureThreshold'], DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD],
    [['healthChecks', '[]', 'initialDelaySeconds'], DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS],
    [['revisionHistoryLimit'], DEFAULT_REVISION_HISTORY_LIMIT],
    [['collisionProtection'], DEFAULT_COLLISION_PROTECTION],
    [['deleteCRDsOnUninstall'], false],
    [['deletionPolicy'], DEFAULT_DELETION_POLICY],
    [['sources', '[]', 'git', 'caSecretRef', 'key'], DEFAULT_CA_KEY],
    [['sources', '[]', 'git', 'caConfigMapRef', 'key'], DEFAULT_CA_KEY],
    [['sources', '[]', 'http', 'caSecretRef', 'key'], DEFAULT_CA_KEY],
    [['sources', '[]', 'http', 'caConfigMapRef', 'key'], DEFAULT_CA_KEY],
    [['config', 'helm', 'valuesFrom', '[]', 'valuesKey'], DEFAULT_VALUES_KEY],
    [['config', 'helm', 'valuesFrom', '[]', 'optional'], false],
    [['postBuild', 'substituteFrom', '[]', 'optional'], false],
    [['sources', '[]', 'image', 'layerSelector', 'operation'], 'extract'],
  ] as const)('%j defaults to %j', (path, value) => {
    expect(prop(spec, ...path).default).toEqual(value);
  });
});
