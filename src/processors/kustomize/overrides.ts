/**
 * config.kustomize's namePrefix, images and patches, as kustomize's own fields: they become the
 * kustomization of a private directory whose only resource is the build directory (reached
 * through a link to the tree, so every file kustomize loads is still one of the bundle's). kustomize
 * applies them to the directory's output exactly as it applies a parent overlay's fields: images
 * and patches after the directory's own, the prefix in front of the directory's names (and of the
 * references to them). Nothing is translated by Hoist.
 */
import type { KustomizeConfig } from '../../../api/v1alpha2/types.ts';

/** the link, inside the private directory, to the tree */
export const TREE_LINK = 'tree';

export function hasOverrides(config: KustomizeConfig | undefined): boolean {
  return !!config && (!!config.namePrefix || (config.images?.length ?? 0) > 0 || (config.patches?.length ?? 0) > 0);
}

/** the private kustomization (JSON, which kustomize reads as YAML) over `buildDir` (relative to the tree) */
export function overrideKustomization(config: KustomizeConfig, buildDir: string): string {
  return JSON.stringify({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [buildDir === '' ? TREE_LINK : `${TREE_LINK}/${buildDir}`],
    ...(config.namePrefix ? { namePrefix: config.namePrefix } : {}),
    ...(config.images?.length ? { images: config.images } : {}),
    ...(config.patches?.length ? { patches: config.patches } : {}),
  });
}
