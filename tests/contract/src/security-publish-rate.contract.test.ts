import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { AuthFileFixture, adminRequest, counterValue, TokenSocket } from './support/security.js';
import { startBroker } from './support/test-broker.js';

const messageId = (n: number) => `rate${String(n).padStart(28, '0')}`;
const message = (n: number) => ({
  messageId: messageId(n),
  topic: 'orders',
  body: new Uint8Array([n]),
  bornAt: 1,
});

describe('publishRatePerSecond: over it, 530 with a retry-after hint the producer honours (DESIGN.md §7)', () => {
  it('refuses a send over the principal rate with 530 and retryAfterMs, storing nothing of it', async () => {
    using auth = new AuthFileFixture({
      ops: { admin: 'read', metrics: true },
      // One message per 2 s: wide enough that a loaded machine still sends the next one inside it.
      bursty: { publish: ['orders'], publishRatePerSecond: 0.5 },
    });
    await using broker = await startBroker({ authFile: auth.path });
    await using session = await TokenSocket.open(broker.endpoint, auth.token('bursty'));
    // The bucket's worth at once, then one more.
    session.send({ type: 'send', id: 1, messages: [message(1)] });
    expect(await session.next()).toMatchObject({ type: 'sendResult', id: 1 });
    session.send({ type: 'send', id: 2, messages: [message(6)] });
    const refused = await session.next();
    expect(refused).toMatchObject({
      type: 'error',
      id: 2,
      code: 530,
      details: { retryAfterMs: expect.any(Number) },
    });
    const hintMs = refused.type === 'error' ? Number(refused.details?.retryAfterMs) : 0;
    expect(hintMs).toBeGreaterThan(0);
    expect(hintMs).toBeLessThanOrEqual(2_000);

    // Another connection of the same principal shares its rate.
    await using second = await TokenSocket.open(broker.endpoint, auth.token('bursty'));
    second.send({ type: 'send', id: 3, messages: [message(7)] });
    expect(await second.next()).toMatchObject({ type: 'error', id: 3, code: 530 });

    const orders = await adminRequest(broker.endpoint, 'GET', '/v1/topics/orders', {
      token: auth.token('ops'),
    });
    expect(await orders.json()).toMatchObject({ stats: { messages: 1 } });
  });

  it('the producer waits out the hint and its send succeeds, where its own backoff alone would give up', async () => {
    using auth = new AuthFileFixture({
      ops: { admin: 'read', metrics: true },
      bursty: { publish: ['orders'], publishRatePerSecond: 1 },
    });
    await using broker = await startBroker({ authFile: auth.path });
    // Three tries 10 ms apart would all land inside the second the rate asks for.
    await using producer = await startProducer(broker.endpoint, {
      token: auth.token('bursty'),
      maxAttempts: 3,
      retryBackoff: { initialMs: 10, multiplier: 1, jitter: 0, maxMs: 10 },
    });
    const startedAt = performance.now();
    await producer.send({ topic: 'orders', body: 'the bucket' });
    expect(await producer.send({ topic: 'orders', body: 'over the rate' })).toMatchObject({ offset: 1 });
    // Admitted no sooner than the rate allows: a second after the first.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(990);

    const metrics = await adminRequest(broker.endpoint, 'GET', '/metrics', { token: auth.token('ops') });
    // One refusal, then the retry after the hint went through.
    expect(counterValue(await metrics.text(), 'ricochet_requests_rejected_total', 'code="530"')).toBe(1);
  });
});
