import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@ricochet/producer';
import { afterAll, describe, expect, it } from 'vitest';
import { FAST_BACKOFF, startProducer, startSimpleConsumer, text } from './support/clients.js';
import { startBroker } from './support/test-broker.js';
import { createTestCertificateAuthority, issueServerCertificate } from './support/test-certificate.js';

const directory = mkdtempSync(join(tmpdir(), 'ricochet-https-'));
const certPath = join(directory, 'broker.crt');
const keyPath = join(directory, 'broker.key');

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('https:// endpoints: the HTTP transport over the broker’s TLS port', () => {
  it('sends and receives with the tls option’s CA, and refuses a certificate it does not trust with TLS_ERROR', async () => {
    const ca = createTestCertificateAuthority();
    const pair = issueServerCertificate(ca, ['127.0.0.1', 'localhost']);
    writeFileSync(certPath, pair.certPem);
    writeFileSync(keyPath, pair.keyPem);
    await using broker = await startBroker({ tlsCert: certPath, tlsKey: keyPath });
    const endpoint = broker.endpoint.replace(/^wss/, 'https');
    const tls = { ca: ca.certPem };

    await using consumer = await startSimpleConsumer(endpoint, {
      group: 'billing',
      subscriptions: { secure: '*' },
      tls,
    });
    await using producer = await startProducer(endpoint, { tls });
    await producer.send({ topic: 'secure', body: 'over https' });
    const [message] = await consumer.receive(1, 30_000);
    expect(message && text(message.body)).toBe('over https');
    if (message) await consumer.ack(message);

    // Without the CA (fetch, the system's authorities) the certificate is refused, not retried.
    const untrusting = new Producer({ endpoint, reconnectBackoff: FAST_BACKOFF });
    try {
      await expect(untrusting.start()).rejects.toMatchObject({ code: 'TLS_ERROR' });
    } finally {
      await untrusting.close();
    }
  });
});
