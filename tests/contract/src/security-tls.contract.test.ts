import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError } from '@ricochet/client';
import { Producer } from '@ricochet/producer';
import { ConsumeResult } from '@ricochet/push-consumer';
import { afterAll, describe, expect, it } from 'vitest';
import { FAST_BACKOFF, startProducer, text } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { createTestCertificateAuthority, issueServerCertificate } from './support/test-certificate.js';
import { transportsServing } from './support/transports.js';

const directory = mkdtempSync(join(tmpdir(), 'ricochet-tls-'));
const certPath = join(directory, 'broker.crt');
const keyPath = join(directory, 'broker.key');

afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Put a server certificate issued by `ca` where the broker reads it. */
function installCertificate(ca: ReturnType<typeof createTestCertificateAuthority>): void {
  const pair = issueServerCertificate(ca, ['127.0.0.1', 'localhost']);
  writeFileSync(certPath, pair.certPem);
  writeFileSync(keyPath, pair.keyPem);
}

/** `GET url` over https trusting `ca`: the status and body. */
function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** Start a producer and return what `start()` threw (or undefined when it connected). */
async function startFailure(endpoint: string, ca: string | undefined): Promise<unknown> {
  const producer = new Producer({
    endpoint,
    reconnectBackoff: FAST_BACKOFF,
    ...(ca === undefined ? {} : { tls: { ca } }),
  });
  try {
    await producer.start();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await producer.close();
  }
}

describe('TLS: --tls-cert/--tls-key serve wss:// and https:// on one port, and tls:// on the TCP port (DESIGN.md §7)', () => {
  describe.each(transportsServing('stream'))('over %s', (transport) => {
    it('carries a producer and a push consumer over TLS with the CA, refuses a client without it, serves https admin', async () => {
      const ca = createTestCertificateAuthority();
      installCertificate(ca);
      await using broker = await startBroker({ tlsCert: certPath, tlsKey: keyPath });
      const endpoint = broker.endpointFor(transport);
      expect(endpoint).toMatch(
        transport === 'ws' ? /^wss:\/\/127\.0\.0\.1:\d+$/ : /^tls:\/\/127\.0\.0\.1:\d+$/,
      );
      const tls = { ca: ca.certPem };

      await using consumer = await startRecordingConsumer(
        endpoint,
        { group: 'tls-readers', subscriptions: { secure: '*' }, tls },
        () => ConsumeResult.SUCCESS,
      );
      await using producer = await startProducer(endpoint, { tls });
      for (let i = 0; i < 20; i++) await producer.send({ topic: 'secure', body: `m${i}` });
      const seen = await consumer.delivered(20);
      expect(seen.map((delivery) => text(delivery.message.body)).sort()).toEqual(
        Array.from({ length: 20 }, (_, i) => `m${i}`).sort(),
      );

      // A client that does not trust the CA fails at once with a clear, non-retryable error.
      const refused = await startFailure(endpoint, undefined);
      expect(refused).toBeInstanceOf(ClientError);
      expect(refused).toMatchObject({ code: 'TLS_ERROR', retryable: false });
      expect((refused as Error).message).toMatch(/certificate .* was refused: .*tls option/);

      // The admin API on the same port, over https.
      const origin = `https://127.0.0.1:${broker.broker.address?.port}`;
      const topics = await httpsGet(`${origin}/v1/topics`, ca.certPem);
      expect(topics.status).toBe(200);
      expect(JSON.parse(topics.body).topics.map((topic: { name: string }) => topic.name)).toContain('secure');
      expect((await httpsGet(`${origin}/healthz`, ca.certPem)).status).toBe(200);
    });

    it('reloads the pair in place (SIGHUP): new handshakes use it, open sessions stay; a bad pair is refused and the old one kept', async () => {
      const first = createTestCertificateAuthority('first CA');
      installCertificate(first);
      await using broker = await startBroker({ tlsCert: certPath, tlsKey: keyPath });
      const endpoint = broker.endpointFor(transport);
      await using producer = await startProducer(endpoint, { tls: { ca: first.certPem } });
      await producer.send({ topic: 'rotated', body: 'before' });

      const second = createTestCertificateAuthority('second CA');
      installCertificate(second);
      expect(await broker.broker.reloadTls()).toEqual({ ok: true });
      expect(await startFailure(endpoint, first.certPem)).toMatchObject({ code: 'TLS_ERROR' });
      expect(await startFailure(endpoint, second.certPem)).toBeUndefined();
      // The session opened under the first certificate carries on.
      await producer.send({ topic: 'rotated', body: 'after' });

      // A key that does not match the certificate: refused, and the second pair stays in force.
      writeFileSync(keyPath, issueServerCertificate(second).keyPem);
      expect(await broker.broker.reloadTls()).toMatchObject({ ok: false, reason: 'invalid' });
      expect(await startFailure(endpoint, second.certPem)).toBeUndefined();
      writeFileSync(keyPath, 'not a key');
      expect(await broker.broker.reloadTls()).toMatchObject({ ok: false, reason: 'invalid' });
      expect(await startFailure(endpoint, second.certPem)).toBeUndefined();
    });
  });

  it('refuses to start with a key that does not match the certificate', async () => {
    const ca = createTestCertificateAuthority();
    installCertificate(ca);
    writeFileSync(keyPath, issueServerCertificate(ca).keyPem);
    await expect(startBroker({ tlsCert: certPath, tlsKey: keyPath })).rejects.toThrow(
      /cannot use TLS certificate/,
    );
  });
});
