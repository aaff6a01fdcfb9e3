/**
 * Install modes: which namespaces the operator watches, from the BundleDeployment's
 * `config.registryV1.watchNamespace` / `watchNamespaces` and `installNamespace`, checked against
 * the modes the CSV supports — OLM v1's render.validateTargetNamespaces:
 *
 *   nothing, watchNamespace ""               → AllNamespaces    target namespaces [""]
 *   one namespace == installNamespace        → OwnNamespace     target namespaces [installNamespace]
 *   one other namespace                      → SingleNamespace  target namespaces [it]
 *   watchNamespaces with two or more         → MultiNamespace   target namespaces as listed
 *
 * `watchNamespace: x` is shorthand for `watchNamespaces: [x]`. As in OLM v1, one namespace is
 * never MultiNamespace (a MultiNamespace-only bundle needs two), and a list that contains the
 * install namespace also needs OwnNamespace support. Pure.
 */
import { processError } from '../errors.ts';
import { supportedInstallModes } from './csv.ts';
import type { ClusterServiceVersion, InstallModeType } from './csv.ts';
import { ProcessCode } from '../errors.ts';

export type InstallMode = InstallModeType;

export interface ResolvedInstallMode {
  mode: InstallMode;
  /** [""] for AllNamespaces */
  targetNamespaces: string[];
}

/** What the BundleDeployment asked for (config.registryV1). */
export interface WatchConfig {
  watchNamespace?: string | undefined;
  watchNamespaces?: readonly string[] | undefined;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** The requested target namespaces; [] means "not set" (AllNamespaces). */
function requestedTargets(watch: WatchConfig): string[] {
  if (watch.watchNamespaces !== undefined && watch.watchNamespace !== undefined) {
    throw processError('config.registryV1: set watchNamespace or watchNamespaces, not both', ProcessCode.InvalidConfig);
  }
  if (watch.watchNamespaces !== undefined) {
    if (watch.watchNamespaces.length === 0)
      throw processError('config.registryV1.watchNamespaces must not be empty (leave it unset for AllNamespaces)', ProcessCode.InvalidConfig);
    const bad = watch.watchNamespaces.filter((ns) => !isDns1123Label(ns));
    if (bad.length > 0)
      throw processError(`config.registryV1.watchNamespaces: ${bad.map((b) => `"${b}"`).join(', ')} is not a valid namespace name`, ProcessCode.InvalidConfig);
    const dup = watch.watchNamespaces.find((ns, i) => watch.watchNamespaces?.indexOf(ns) !== i);
    if (dup !== undefined) throw processError(`config.registryV1.watchNamespaces lists "${dup}" twice`, ProcessCode.InvalidConfig);
    return [...watch.watchNamespaces];
  }
  const ns = watch.watchNamespace;
  if (ns === undefined || ns === '') return [];
  if (!isDns1123Label(ns)) throw processError(`config.registryV1.watchNamespace "${ns}" is not a valid namespace name`, ProcessCode.InvalidConfig);
  return [ns];
}

function installModeFor(installNamespace: string, targets: readonly string[]): InstallMode {
  if (targets.length === 0) return 'AllNamespaces';
  if (targets.length > 1) return 'MultiNamespace';
  return targets[0] === installNamespace ? 'OwnNamespace' : 'SingleNamespace';
}

/**
 * Resolves and validates the install mode. Throws a terminal HoistError (code
 * unsupported-install-mode, subject the CSV file) when the CSV does not support it, naming the
 * CSV, the modes it does support and how to ask for one of them; invalid-config for malformed
 * namespaces.
 */
export function resolveInstallMode(csv: ClusterServiceVersion, csvFile: string, installNamespace: string, watch: WatchConfig): ResolvedInstallMode {
  const targets = requestedTargets(watch);
  const mode = installModeFor(installNamespace, targets);
  const supported = supportedInstallModes(csv);
  // OLM v1: a list that includes the install namespace also needs OwnNamespace
  const missing = mode === 'MultiNamespace' && targets.includes(installNamespace) && !supported.has('OwnNamespace') ? 'OwnNamespace' : undefined;
  if (!supported.has(mode) || missing) {
    const modes = [...supported].sort();
    const hints: string[] = [];
    if (supported.has('AllNamespaces')) hints.push('leave config.registryV1.watchNamespace empty for AllNamespaces');
    if (supported.has('OwnNamespace')) hints.push(`set config.registryV1.watchNamespace to "${installNamespace}" for OwnNamespace`);
    if (supported.has('SingleNamespace')) hints.push('set config.registryV1.watchNamespace to another namespace for SingleNamespace');
    if (supported.has('MultiNamespace')) {
      hints.push(
        `set config.registryV1.watchNamespaces to two or more namespaces${supported.has('OwnNamespace') ? '' : ` other than "${installNamespace}"`} for MultiNamespace`,
      );
    }
    const what = missing
      ? `install mode MultiNamespace with the install namespace "${installNamespace}" among its targets (that needs OwnNamespace)`
      : `install mode ${mode}`;
    throw processError(
      `ClusterServiceVersion ${csv.name} does not support ${what}; it supports ${modes.length ? modes.join(', ') : 'none'}` +
        (hints.length ? ` (${hints.join('; ')})` : ''),
      ProcessCode.UnsupportedInstallMode,
      csvFile,
    );
  }
  return { mode, targetNamespaces: mode === 'AllNamespaces' ? [''] : targets };
}
