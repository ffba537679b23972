// The image's health check (deploy/Dockerfile): GET a probe of the broker in this container and
// exit 0 on 200, 1 otherwise. `node healthcheck.mjs /healthz` (liveness, the image's HEALTHCHECK)
// or `/readyz` (readiness). It reads the port and TLS settings the broker reads, from the same
// RICOCHET_* variables, and asks on loopback unless the broker binds one address only.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

const PROBES = new Set(['/healthz', '/readyz']);
const TIMEOUT_MS = 2_000;

const path = process.argv[2] ?? '/healthz';
if (!PROBES.has(path)) {
  console.error(`healthcheck: ${path} is no probe; use /healthz or /readyz`);
  process.exit(2);
}
const host = process.env.RICOCHET_HOST;
const anyInterface = host === undefined || host === '' || host === '0.0.0.0' || host === '::';
const tls = Boolean(process.env.RICOCHET_TLS_CERT);
const request = (tls ? httpsRequest : httpRequest)(
  {
    host: anyInterface ? '127.0.0.1' : host,
    port: Number(process.env.RICOCHET_PORT || 7720),
    path,
    timeout: TIMEOUT_MS,
    // The certificate names the broker's public name, not the loopback address asked here.
    rejectUnauthorized: false,
  },
  (response) => {
    response.resume();
    if (response.statusCode !== 200) console.error(`healthcheck: ${path} answered ${response.statusCode}`);
    process.exit(response.statusCode === 200 ? 0 : 1);
  },
);
request.on('timeout', () => request.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
request.on('error', (error) => {
  console.error(`healthcheck: ${path}: ${error.message}`);
  process.exit(1);
});
request.end();
