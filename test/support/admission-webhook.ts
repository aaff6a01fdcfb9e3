/**
 * A real validating admission webhook for tests: an https server on loopback with a throwaway
 * certificate (openssl), whose answer to each AdmissionReview a test decides, and the
 * ValidatingWebhookConfiguration that sends it the writes of ConfigMaps carrying a label. The API
 * server calls it like any webhook: a denial refuses the write, no answer (port 1) is a 500.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeClient, KubeObject } from '../../src/kube/types.ts';

export const WEBHOOK_CONFIG = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' } as const;

/** what the webhook was asked: the object being written */
export interface AdmissionRequest {
  uid: string;
  operation?: string;
  object?: KubeObject & { data?: Record<string, string> };
}

/** allowed, or refused with this status (code 500: the server failing; 400/403: a policy denying) */
export type AdmissionAnswer = { allowed: true } | { allowed: false; status: { code: number; reason?: string; message: string } };

export interface AdmissionWebhook {
  url: string;
  caBundle: string;
  /** every review received, in order */
  readonly requests: AdmissionRequest[];
  close(): Promise<void>;
}

export async function startAdmissionWebhook(answer: (request: AdmissionRequest) => AdmissionAnswer): Promise<AdmissionWebhook> {
  const pki = await mkdtemp(join(tmpdir(), 'hoist-webhook-'));
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    join(pki, 'key.pem'),
    '-out',
    join(pki, 'cert.pem'),
  ]);
  const cert = await readFile(join(pki, 'cert.pem'));
  const requests: AdmissionRequest[] = [];
  const server = createServer({ key: await readFile(join(pki, 'key.pem')), cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: AdmissionRequest };
      requests.push(review.request);
      const response = { uid: review.request.uid, ...answer(review.request) };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/validate`,
    caBundle: cert.toString('base64'),
    requests,
    async close() {
      await new Promise((r) => server.close(r));
      await rm(pki, { recursive: true, force: true });
    },
  };
}

/**
 * A validating webhook configuration `name` on creates and updates of the ConfigMaps with `label`
 * (failurePolicy Fail); by default one nothing answers (port 1), so the API server refuses their
 * writes with a 500.
 */
export async function guardConfigMaps(
  client: KubeClient,
  name: string,
  label: Record<string, string>,
  clientConfig: { url: string; caBundle?: string } = { url: 'https://127.0.0.1:1/validate' },
  timeoutSeconds = 1,
): Promise<void> {
  await client.create({
    ...WEBHOOK_CONFIG,
    metadata: { name },
    webhooks: [
      {
        name: 'guard.hoist.test',
        clientConfig,
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }],
        objectSelector: { matchLabels: label },
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds,
      },
    ],
  } as unknown as KubeObject);
}
