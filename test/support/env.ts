/** What the global setup provides to every test file. */
import { inject } from 'vitest';

export function kubeconfigPath(): string {
  return inject('kubeconfig');
}

/** path of the API server's audit log, or "" when the cluster is not ours (existing, k3s) */
export function auditLogPath(): string {
  return inject('auditLog');
}

export function isLocalControlPlane(): boolean {
  return inject('clusterKind') === 'local';
}
