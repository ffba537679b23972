import { describe, expect, it } from 'vitest';
import { startRocketBroker } from './support/rocketmq.js';
import {
  duration,
  millis,
  rawRocketClient,
  receivedOf,
  rocketMessage,
  simpleReceive,
} from './support/rocketmq-raw.js';

const MIB = 1024 * 1024;

function consumerSettings(group: string, topic: string, clientType = 'SIMPLE_CONSUMER') {
  return {
    clientType,
    subscription: {
      group: { name: group },
      subscriptions: [{ topic: { name: topic }, expression: { type: 'TAG', expression: '*' } }],
    },
  };
}

/**
 * The RocketMQ 5 gRPC protocol with raw calls, after the cases of the RocketMQ broker's own
 * integration tests (apache/rocketmq `test/.../grpc/v2/GrpcBaseIT.java`): what the Java, Go and
 * Python clients rely on, checked without them.
 */
describe('RocketMQ 5 gRPC protocol (GrpcBaseIT cases)', () => {
  it('Telemetry answers a consumer with its group’s real policy: 17 attempts and the stepped delays (P3, P4)', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'settings-client');
    const { answer, end } = await client.telemetry(consumerSettings('billing', 'orders'));
    end();
    expect(answer.status.code).toBe('OK');
    const policy = answer.settings.backoffPolicy;
    expect(policy.maxAttempts).toBe(17);
    expect(policy.customizedBackoff.next.map(millis)).toEqual(
      [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200].map((s) => s * 1_000),
    );
    expect(answer.settings.subscription).toMatchObject({ fifo: false, receiveBatchSize: 32 });
  });

  it('Telemetry tells a FIFO group’s consumers FIFO and its fixed 3 s (P5), and a producer the send backoff (R2)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putGroup('books', { fifo: true, maxRetries: 2 });
    using client = rawRocketClient(rocket.endpoints, 'fifo-client');
    const fifo = await client.telemetry(consumerSettings('books', 'ledger', 'PUSH_CONSUMER'));
    fifo.end();
    expect(fifo.answer.settings.subscription.fifo).toBe(true);
    expect(fifo.answer.settings.backoffPolicy.maxAttempts).toBe(3);
    expect(fifo.answer.settings.backoffPolicy.customizedBackoff.next.map(millis)).toEqual([3_000]);

    const producer = await client.telemetry({
      clientType: 'PRODUCER',
      publishing: { topics: [{ name: 'orders' }] },
    });
    producer.end();
    const backoff = producer.answer.settings.backoffPolicy.exponentialBackoff;
    expect([millis(backoff.initial), millis(backoff.max), backoff.multiplier]).toEqual([
      1_000,
      120_000,
      expect.closeTo(1.6, 5),
    ]);
    expect(producer.answer.settings.publishing.maxBodySize).toBeGreaterThan(3 * MIB);
  });

  it('simple consumer to DLQ: retry max 1 means exactly 2 deliveries, then %DLQ%<group> (S5)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putGroup('billing', { maxRetries: 1 });
    using client = rawRocketClient(rocket.endpoints, 'dlq-client');
    await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20));
    const sent = await client.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('poison'))],
    });
    expect(sent.status.code).toBe('OK');
    const attempts: number[] = [];
    for (let receive = 0; receive < 3; receive++) {
      const { messages } = receivedOf(
        await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20, 2_000)),
      );
      attempts.push(...messages.map((message) => message.systemProperties.deliveryAttempt));
    }
    expect(attempts).toEqual([1, 2]);
    const dlq = await rocket.broker.admin.listDlq('billing');
    expect(dlq.messages.map((message) => message.messageId)).toEqual([sent.entries[0].messageId]);
  });

  it('ack of a stale and a fresh handle answers MULTIPLE_RESULTS with each entry’s own status (S3, S4)', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'ack-client');
    await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20));
    await client.unary('SendMessage', { messages: [rocketMessage('orders', Buffer.from('a'))] });
    const { messages } = receivedOf(
      await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 2_000)),
    );
    const [message] = messages;
    const stale = message.systemProperties.receiptHandle;
    const changed = await client.unary('ChangeInvisibleDuration', {
      group: { name: 'billing' },
      topic: { name: 'orders' },
      receiptHandle: stale,
      messageId: message.systemProperties.messageId,
      invisibleDuration: duration(30_000),
    });
    expect(changed.status.code).toBe('OK');
    expect(changed.receiptHandle).not.toBe(stale);
    const acked = await client.unary('AckMessage', {
      group: { name: 'billing' },
      topic: { name: 'orders' },
      entries: [
        { messageId: message.systemProperties.messageId, receiptHandle: stale },
        { messageId: message.systemProperties.messageId, receiptHandle: changed.receiptHandle },
      ],
    });
    expect(acked.status.code).toBe('MULTIPLE_RESULTS');
    expect(acked.entries.map((entry: { status: { code: string } }) => entry.status.code)).toEqual([
      'INVALID_RECEIPT_HANDLE',
      'OK',
    ]);
    expect((await rocket.broker.admin.getGroup('billing')).stats.committed).toBe(1);
  });

  it('change invisible duration, then the message is delivered again with the next attempt (S4, P6)', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'change-client');
    await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20));
    await client.unary('SendMessage', { messages: [rocketMessage('orders', Buffer.from('again'))] });
    const first = receivedOf(
      await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 2_000)),
    );
    const [message] = first.messages;
    expect(message.systemProperties.deliveryAttempt).toBe(1);
    // The body digest every official client checks: MD5, upper-case hex.
    expect(message.systemProperties.bodyDigest).toEqual({
      type: 'MD5',
      checksum: '639849F6B368019778991B32434354FC',
    });
    await client.unary('ChangeInvisibleDuration', {
      group: { name: 'billing' },
      topic: { name: 'orders' },
      receiptHandle: message.systemProperties.receiptHandle,
      messageId: message.systemProperties.messageId,
      invisibleDuration: duration(50),
    });
    const second = receivedOf(
      await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 5_000)),
    );
    expect(
      second.messages.map((m) => [m.systemProperties.messageId, m.systemProperties.deliveryAttempt]),
    ).toEqual([[message.systemProperties.messageId, 2]]);
  });

  it('a delay message is not delivered before its delivery_timestamp (T1)', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'delay-client');
    await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20));
    const deliverAt = Date.now() + 1_000;
    await client.unary('SendMessage', {
      messages: [
        rocketMessage('orders', Buffer.from('later'), {
          messageType: 'DELAY',
          deliveryTimestamp: duration(deliverAt),
        }),
      ],
    });
    const { messages } = receivedOf(
      await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 5_000)),
    );
    expect(messages).toHaveLength(1);
    expect(Date.now()).toBeGreaterThanOrEqual(deliverAt);
  });

  it('a message at the broker’s body limit fits, one byte over answers MESSAGE_BODY_TOO_LARGE and stores nothing', async () => {
    await using rocket = await startRocketBroker({ maxBodyBytes: 5 * MIB });
    using client = rawRocketClient(rocket.endpoints, 'big-client', { maxMessageBytes: 8 * MIB });
    await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 20));
    const big = Buffer.alloc(5 * MIB, 7);
    const sent = await client.unary('SendMessage', { messages: [rocketMessage('orders', big)] });
    expect(sent.status.code).toBe('OK');
    const over = await client.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.alloc(5 * MIB + 1))],
    });
    expect(over.status.code).toBe('MESSAGE_BODY_TOO_LARGE');
    const { messages } = receivedOf(
      await client.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 2_000)),
    );
    expect(messages.map((message) => message.body.length)).toEqual([big.length]);
    expect((await rocket.broker.admin.getTopic('orders')).stats.messages).toBe(1);
  });

  it('a resend of the same message_id is answered with the original receipt and stored once (R3)', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'dedup-client');
    const message = rocketMessage('orders', Buffer.from('once'));
    const first = await client.unary('SendMessage', { messages: [message] });
    const again = await client.unary('SendMessage', { messages: [message] });
    expect(again.entries[0]).toMatchObject({
      messageId: first.entries[0].messageId,
      offset: first.entries[0].offset,
    });
    expect((await rocket.broker.admin.getTopic('orders')).stats.messages).toBe(1);
  });

  it('throttling answers TOO_MANY_REQUESTS, the code RocketMQ producers back off on (R4)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putTopic('orders', { type: 'normal', maxBacklogMessages: 1 });
    using client = rawRocketClient(rocket.endpoints, 'r4-client');
    await client.telemetry(consumerSettings('billing', 'orders')).then(({ end }) => end());
    await client.unary('SendMessage', { messages: [rocketMessage('orders', Buffer.from('1'))] });
    const throttled = await client.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('2'))],
    });
    expect(throttled.status.code).toBe('TOO_MANY_REQUESTS');
  });

  it('an unknown topic with auto-create off answers TOPIC_NOT_FOUND; a type mismatch its 400xx code', async () => {
    await using rocket = await startRocketBroker({ autoCreateTopics: false });
    await rocket.broker.admin.putTopic('ledger', { type: 'fifo' });
    using client = rawRocketClient(rocket.endpoints, 'unknown-client');
    const route = await client.unary('QueryRoute', { topic: { name: 'nowhere' } });
    expect(route.status.code).toBe('TOPIC_NOT_FOUND');
    const mismatch = await client.unary('SendMessage', {
      messages: [rocketMessage('ledger', Buffer.from('no group'))],
    });
    expect(mismatch.status.code).toBe('MESSAGE_PROPERTY_CONFLICT_WITH_TYPE');
    expect((await rocket.broker.admin.getTopic('ledger')).stats.messages).toBe(0);
  });

  it('QueryRoute names queue 0 on this broker, at the address the client used', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'route-client');
    const [host, port] = rocket.endpoints.split(':');
    const endpoints = { scheme: 'IPv4', addresses: [{ host, port: Number(port) }] };
    const route = await client.unary('QueryRoute', { topic: { name: 'orders' }, endpoints });
    expect(route.status.code).toBe('OK');
    expect(route.messageQueues).toEqual([
      expect.objectContaining({
        id: 0,
        permission: 'READ_WRITE',
        broker: expect.objectContaining({ id: 0, endpoints }),
      }),
    ]);
  });

  it('RPCs Ricochet does not serve answer UNSUPPORTED at once', async () => {
    await using rocket = await startRocketBroker();
    using client = rawRocketClient(rocket.endpoints, 'unsupported-client');
    for (const method of [
      'EndTransaction',
      'UpdateOffset',
      'GetOffset',
      'QueryOffset',
      'RecallMessage',
      'SyncLiteSubscription',
    ]) {
      expect((await client.unary(method, {})).status.code, method).toBe('UNSUPPORTED');
    }
    const pulled = await client.stream('PullMessage', { group: { name: 'billing' } });
    expect(pulled.map((frame) => frame.status?.code)).toEqual(['UNSUPPORTED']);
  });

  it('a push consumer’s leases are released when its Telemetry stream goes, and the release is no failure (C2)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putGroup('billing', { maxRetries: 0 });
    using leaving = rawRocketClient(rocket.endpoints, 'leaving-client');
    const session = await leaving.telemetry(consumerSettings('billing', 'orders', 'PUSH_CONSUMER'));
    const sent = await leaving.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('held'))],
    });
    const pushReceive = {
      ...simpleReceive('billing', 'orders', 0, 2_000),
      invisibleDuration: undefined,
      autoRenew: true,
    };
    const held = receivedOf(await leaving.stream('ReceiveMessage', pushReceive));
    expect(held.messages).toHaveLength(1);
    // The push lease lasts the group's consumption timeout (15 min): only the release frees it.
    session.cancel();
    using staying = rawRocketClient(rocket.endpoints, 'staying-client');
    const again = receivedOf(
      await staying.stream('ReceiveMessage', simpleReceive('billing', 'orders', 30_000, 10_000)),
    );
    expect(
      again.messages.map((m) => [m.systemProperties.messageId, m.systemProperties.deliveryAttempt]),
    ).toEqual([[sent.entries[0].messageId, 1]]);
    expect((await rocket.broker.admin.getGroup('billing')).stats.dlq).toBe(0);
  });
});
