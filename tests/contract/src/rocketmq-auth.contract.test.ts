import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { describe, expect, it } from 'vitest';
import { memoryLogger, startRocketBroker } from './support/rocketmq.js';
import { rawRocketClient, rocketMessage, simpleReceive } from './support/rocketmq-raw.js';
import { AuthFileFixture, adminRequest, counterValue } from './support/security.js';

const PRODUCER = { accessKey: 'orders-service', secretKey: 'orders-service-secret-0123456789' };
const CONSUMER = { accessKey: 'billing-worker', secretKey: 'billing-worker-secret-0123456789' };

/** DESIGN §7's principals, with RocketMQ credentials for two of them. */
const PRINCIPALS = {
  ops: { admin: 'write', metrics: true },
  'orders-service': { publish: ['orders'], rocketmq: PRODUCER },
  'billing-worker': { consume: [{ group: 'billing-*', topics: ['orders'] }], rocketmq: CONSUMER },
} as const;

/** The RocketMQ signature headers, as Apache's clients write them, signed with `secretKey`. */
async function signedHeaders(accessKey: string, secretKey: string): Promise<Record<string, string>> {
  const { createHmac } = await import('node:crypto');
  const dateTime = `${new Date().toISOString().split('.')[0]?.replace(/[-:]/g, '')}Z`;
  const signature = createHmac('sha1', secretKey).update(dateTime).digest('hex').toUpperCase();
  return {
    'x-mq-date-time': dateTime,
    authorization: `MQv2-HMAC-SHA1 Credential=${accessKey}, SignedHeaders=x-mq-date-time, Signature=${signature}`,
  };
}

describe('RocketMQ 5 clients and the auth file (DESIGN §7): the same principals as on every transport', () => {
  it('the official clients sign with their principal’s access and secret key; publish and consume are that principal’s', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using rocket = await startRocketBroker({ authFile: auth.path });
    const consumer = new SimpleConsumer({
      endpoints: rocket.endpoints,
      namespace: '',
      consumerGroup: 'billing-eu',
      subscriptions: new Map([['orders', '*']]),
      awaitDuration: 1_000,
      sessionCredentials: { accessKey: CONSUMER.accessKey, accessSecret: CONSUMER.secretKey },
      logger: memoryLogger(),
    });
    await consumer.startup();
    try {
      const producer = new Producer({
        endpoints: rocket.endpoints,
        namespace: '',
        topics: ['orders'],
        sessionCredentials: { accessKey: PRODUCER.accessKey, accessSecret: PRODUCER.secretKey },
        logger: memoryLogger(),
      });
      await producer.startup();
      const receipt = await producer.send({ topic: 'orders', body: Buffer.from('signed') });
      await producer.shutdown();
      const [message] = await consumer.receive(1, 30_000);
      expect(message?.messageId).toBe(receipt.messageId);
      if (message) await consumer.ack(message);
    } finally {
      await consumer.shutdown();
    }
  });

  it('a missing, unknown or wrongly signed request answers UNAUTHORIZED and stores nothing', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using rocket = await startRocketBroker({ authFile: auth.path });
    const attempts = [
      {},
      await signedHeaders('nobody', PRODUCER.secretKey),
      await signedHeaders(PRODUCER.accessKey, 'not-the-secret-key-of-anyone'),
      {
        ...(await signedHeaders(PRODUCER.accessKey, PRODUCER.secretKey)),
        'x-mq-date-time': '20200101T000000Z',
      },
    ];
    for (const metadata of attempts) {
      using client = rawRocketClient(rocket.endpoints, 'intruder', { metadata });
      const sent = await client.unary('SendMessage', {
        messages: [rocketMessage('orders', Buffer.from('x'))],
      });
      expect(sent.status.code).toBe('UNAUTHORIZED');
    }
    const topics = await adminRequest(rocket.broker.endpoint, 'GET', '/v1/topics', {
      token: auth.token('ops'),
    });
    expect(((await topics.json()) as { topics: unknown[] }).topics).toEqual([]);
    const metrics = await adminRequest(rocket.broker.endpoint, 'GET', '/metrics', {
      token: auth.token('ops'),
    });
    const text = await metrics.text();
    expect(
      counterValue(text, 'ricochet_auth_failures_total', 'reason="missing_token"') +
        counterValue(text, 'ricochet_auth_failures_total', 'reason="unknown_token"'),
    ).toBe(4);
  });

  it('a principal may do only what it is granted: FORBIDDEN, and nothing changes', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using rocket = await startRocketBroker({ authFile: auth.path });
    // The consumer may not publish: its message is refused and not stored.
    using asConsumer = rawRocketClient(rocket.endpoints, 'consumer-client', {
      metadata: await signedHeaders(CONSUMER.accessKey, CONSUMER.secretKey),
    });
    const sent = await asConsumer.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('x'))],
    });
    expect(sent.entries.map((entry: { status: { code: string } }) => entry.status.code)).toEqual([
      'FORBIDDEN',
    ]);
    // The producer may not consume, nor a consumer read a group outside its grant.
    using asProducer = rawRocketClient(rocket.endpoints, 'producer-client', {
      metadata: await signedHeaders(PRODUCER.accessKey, PRODUCER.secretKey),
    });
    const receivedByProducer = await asProducer.stream(
      'ReceiveMessage',
      simpleReceive('billing-eu', 'orders', 1_000),
    );
    expect(receivedByProducer[0]?.status?.code).toBe('FORBIDDEN');
    const otherGroup = await asConsumer.stream('ReceiveMessage', simpleReceive('shipping', 'orders', 1_000));
    expect(otherGroup[0]?.status?.code).toBe('FORBIDDEN');
    const settings = await asProducer.telemetry({
      clientType: 'SIMPLE_CONSUMER',
      subscription: { group: { name: 'billing-eu' }, subscriptions: [{ topic: { name: 'orders' } }] },
    });
    settings.end();
    expect(settings.answer.status.code).toBe('FORBIDDEN');
    const groups = await adminRequest(rocket.broker.endpoint, 'GET', '/v1/groups', {
      token: auth.token('ops'),
    });
    expect(((await groups.json()) as { groups: unknown[] }).groups).toEqual([]);
  });
});
