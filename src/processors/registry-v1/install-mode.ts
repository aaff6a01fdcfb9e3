/**
 * Install modes: which namespaces the operator watches, from the BundleDeployment's
 * `config.registryV1.watchNamespace` and `installNamespace`, checked against the modes the CSV
 * supports — OLM v1's render.validateTargetNamespaces restricted to one watch namespace (the
 * BundleDeployment API has no list, so MultiNamespace cannot be asked for).
 *
 *   watchNamespace unset or ""         → AllNamespaces    target namespaces [""]
 *   watchNamespace == installNamespace → OwnNamespace     target namespaces [installNamespace]
 *   watchNamespace != installNamespace → SingleNamespace  target namespaces [watchNamespace]
 *
 * Pure.
 */
import { processError } from '../errors.ts';
import { supportedInstallModes } from './csv.ts';
import type { ClusterServiceVersion } from './csv.ts';

export type InstallMode = 'AllNamespaces' | 'OwnNamespace' | 'SingleNamespace';

export interface ResolvedInstallMode {
  mode: InstallMode;
  /** [""] for AllNamespaces */
  targetNamespaces: string[];
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

export function installModeFor(installNamespace: string, watchNamespace: string | undefined): InstallMode {
  if (watchNamespace === undefined || watchNamespace === '') return 'AllNamespaces';
  return watchNamespace === installNamespace ? 'OwnNamespace' : 'SingleNamespace';
}

/**
 * Resolves and validates the install mode. Throws a terminal HoistError (code
 * unsupported-install-mode, subject the CSV file) when the CSV does not support it, saying which
 * modes it does support and how to ask for one of them.
 */
export function resolveInstallMode(
  csv: ClusterServiceVersion,
  csvFile: string,
  installNamespace: string,
  watchNamespace: string | undefined,
): ResolvedInstallMode {
  if (watchNamespace !== undefined && watchNamespace !== '' && !isDns1123Label(watchNamespace)) {
    throw processError(`config.registryV1.watchNamespace "${watchNamespace}" is not a valid namespace name`, 'invalid-config');
  }
  const mode = installModeFor(installNamespace, watchNamespace);
  const supported = supportedInstallModes(csv);
  if (!supported.has(mode)) {
    const modes = [...supported].sort();
    const hints: string[] = [];
    if (supported.has('AllNamespaces')) hints.push('leave config.registryV1.watchNamespace empty for AllNamespaces');
    if (supported.has('OwnNamespace')) hints.push(`set config.registryV1.watchNamespace to "${installNamespace}" for OwnNamespace`);
    if (supported.has('SingleNamespace')) hints.push('set config.registryV1.watchNamespace to another namespace for SingleNamespace');
    throw processError(
      `ClusterServiceVersion ${csv.name} does not support install mode ${mode}; it supports ${modes.length ? modes.join(', ') : 'none'}` +
        (hints.length ? ` (${hints.join('; ')})` : ''),
      'unsupported-install-mode',
      csvFile,
    );
  }
  const targetNamespaces = mode === 'AllNamespaces' ? [''] : mode === 'OwnNamespace' ? [installNamespace] : [watchNamespace as string];
  return { mode, targetNamespaces };
}
