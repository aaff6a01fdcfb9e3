/**
 * The dev cluster's own bootstrap requests (creating kwok's node, cordoning and draining the real
 * node): JSON over HTTPS with the admin client certificate, node built-ins only (src/devcluster
 * imports nothing from the controller's client). Not a general client: no watches, no retries.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { classifyStatus, type StatusClass } from '../util/http-status.ts';
import type { Pki } from './certs.ts';

export interface AdminAnswer {
  status: number;
  answer: StatusClass;
  body: unknown;
  text: string;
}

/** One request as the admin; resolves with any status (the caller decides), rejects on transport errors. */
export async function adminRequest(
  server: string,
  pki: Pki,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<AdminAnswer> {
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  return new Promise((resolve, reject) => {
    const req = request(
      `${server}${path}`,
      { ...tls, method, timeout: 30_000, headers: { 'content-type': contentType, accept: 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          resolve({ status, answer: classifyStatus(status), body: parsed, text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30s`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
