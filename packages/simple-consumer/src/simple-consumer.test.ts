import { Connection, ReceivedMessage } from '@ricochet/client';
import { FAST_BACKOFF, FakeBroker, nextStatus, rejectionOf } from '@ricochet/client-testkit';
import { BrokerError } from '@ricochet/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimpleConsumer } from './simple-consumer.js';
import type { SimpleConsumerOptions } from './simple-consumer-options.js';

const TWELVE_HOURS_MS = 12 * 60 * 60 * 1_000;

let broker: FakeBroker | undefined;
const consumers: SimpleConsumer[] = [];

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.close({ drainTimeoutMs: 0 })));
  await broker?.close();
  broker = undefined;
  vi.restoreAllMocks();
});

async function startBroker(): Promise<FakeBroker> {
  broker = await FakeBroker.start();
  return broker;
}

function createConsumer(endpoint: string, options: Partial<SimpleConsumerOptions> = {}): SimpleConsumer {
  const consumer = new SimpleConsumer({
    endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    awaitDurationMs: 0,
    reconnectBackoff: FAST_BACKOFF,
    onProtocolError: () => {},
    ...options,
  });
  consumers.push(consumer);
  return consumer;
}

function readyMessages(fake: FakeBroker, count: number): void {
  for (let index = 0; index < count; index++) {
    fake.ready.push(
      FakeBroker.deliveredMessage({
        messageId: `0193a1f4c2d87b3e9f6a5c4b3e2d1f0${index}`,
        offset: index,
        tag: 'paid',
        deliveryAttempt: 1,
      }),
    );
  }
}

describe('start', () => {
  it('registers the group and its subscriptions, so the position of the group is taken now', async () => {
    const fake = await startBroker();
    const consumer = createConsumer(fake.endpoint, { subscriptions: { orders: 'paid', refunds: '*' } });
    await consumer.start();
    expect(fake.framesOf('register')).toEqual([
      expect.objectContaining({ group: 'billing', subscriptions: { orders: 'paid', refunds: '*' } }),
    ]);
    await consumer.start();
    expect(fake.framesOf('register')).toHaveLength(1);
  });

  it('rejects with the code of the broker when it refuses the registration, and may be tried again', async () => {
    const fake = await startBroker();
    let refusals = 1;
    fake.on('register', (frame, session) => {
      if (refusals-- > 0) {
        session.send({ type: 'error', id: frame.id, code: 404, message: 'group "billing" does not exist' });
      } else session.send({ type: 'ok', id: frame.id });
    });
    const consumer = createConsumer(fake.endpoint);
    expect(await rejectionOf(consumer.start())).toMatchObject({ code: 404 });
    await consumer.start();
    expect(fake.framesOf('register')).toHaveLength(2);
  });
});

describe('receive (S2)', () => {
  it('leases messages with the group, subscriptions and durations it was given', async () => {
    const fake = await startBroker();
    readyMessages(fake, 3);
    const consumer = createConsumer(fake.endpoint, {
      subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
      awaitDurationMs: 20_000,
    });
    await consumer.start();
    const messages = await consumer.receive(2, 30_000);
    expect(fake.framesOf('receive')).toEqual([
      {
        type: 'receive',
        id: expect.any(Number),
        group: 'billing',
        subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
        maxMessages: 2,
        invisibleDurationMs: 30_000,
        awaitDurationMs: 20_000,
      },
    ]);
    expect(messages).toHaveLength(2);
    expect(messages[0]).toBeInstanceOf(ReceivedMessage);
    expect(messages.map((message) => [message.messageId, message.offset, message.tag])).toEqual([
      ['0193a1f4c2d87b3e9f6a5c4b3e2d1f00', 0, 'paid'],
      ['0193a1f4c2d87b3e9f6a5c4b3e2d1f01', 1, 'paid'],
    ]);
    expect(await consumer.receive(32, 10)).toHaveLength(1);
    expect(await consumer.receive(32, 10)).toEqual([]);
  });

  it('gives a receive awaitDurationMs + requestTimeoutMs to be answered', async () => {
    const fake = await startBroker();
    const request = vi.spyOn(Connection.prototype, 'request');
    const consumer = createConsumer(fake.endpoint, { awaitDurationMs: 20_000, requestTimeoutMs: 30_000 });
    await consumer.receive(1, 1_000);
    expect(request.mock.calls[0]?.[1]).toMatchObject({ timeoutMs: 50_000 });
    // Never answered: the receive times out at that bound, a retryable TIMEOUT.
    fake.on('receive', () => {});
    const quick = createConsumer(fake.endpoint, { awaitDurationMs: 20, requestTimeoutMs: 20 });
    expect(await rejectionOf(quick.receive(1, 1_000))).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('starts by itself and resumes after a reconnect', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const disconnected = nextStatus(consumer, 'disconnected');
    expect(await consumer.receive(1, 1_000)).toHaveLength(1);
    fake.dropAll();
    await disconnected;
    readyMessages(fake, 1);
    expect(await consumer.receive(1, 1_000)).toHaveLength(1);
    expect(fake.sessions).toHaveLength(2);
  });

  it('rejects with ABORTED when the signal fires, and with CLIENT_CLOSED when closed meanwhile', async () => {
    const fake = await startBroker();
    fake.on('receive', () => {});
    const consumer = createConsumer(fake.endpoint, { awaitDurationMs: 20_000 });
    await consumer.start();
    const controller = new AbortController();
    const aborted = rejectionOf(consumer.receive(1, 1_000, { signal: controller.signal }));
    await fake.waitForFrames('receive');
    controller.abort();
    expect(await aborted).toMatchObject({ code: 'ABORTED' });

    const waiting = rejectionOf(consumer.receive(1, 1_000, { signal: new AbortController().signal }));
    await fake.waitForFrames('receive', 2);
    const startedAt = performance.now();
    await consumer.close();
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await waiting).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
    expect((await rejectionOf(consumer.receive(1, 1_000))).code).toBe('CLIENT_CLOSED');
  });
});

describe('ack (S3)', () => {
  it('commits with the receipt handle of the message, and fails with 410 the second time', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    await consumer.ack(message);
    expect(fake.framesOf('ack').map((frame) => frame.receiptHandles)).toEqual([['lease-1']]);
    const error = await rejectionOf(consumer.ack(message));
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({
      code: 410,
      retryable: false,
      errorName: 'INVALID_RECEIPT_HANDLE',
      details: { messageId: message.messageId },
    });
  });

  it('sends acks made together in one frame, each with its own outcome', async () => {
    const fake = await startBroker();
    readyMessages(fake, 3);
    const consumer = createConsumer(fake.endpoint);
    const messages = await consumer.receive(3, 1_000);
    expect(messages).toHaveLength(3);
    const [first] = messages;
    if (first === undefined) throw new Error('no message');
    await consumer.ack(first);
    // The first is acked already: in the shared frame only its outcome is a 410.
    const outcomes = await Promise.allSettled(messages.map((message) => consumer.ack(message)));
    expect(fake.framesOf('ack').map((frame) => frame.receiptHandles)).toEqual([
      ['lease-1'],
      ['lease-1', 'lease-2', 'lease-3'],
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(outcomes[0]).toMatchObject({ reason: { code: 410 } });
  });

  it('propagates a whole-frame error with its code', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    fake.on('ack', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 503, message: 'shutting down' }),
    );
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    expect(await rejectionOf(consumer.ack(message))).toMatchObject({ code: 503, retryable: true });
  });
});

describe('deadLetter (D3)', () => {
  it('sends the lease to the DLQ with its reason, and fails with 410 once it is settled', async () => {
    const fake = await startBroker();
    readyMessages(fake, 2);
    const consumer = createConsumer(fake.endpoint);
    const [first, second] = await consumer.receive(2, 1_000);
    if (first === undefined || second === undefined) throw new Error('no message');
    await consumer.deadLetter(first, 'bad schema');
    await consumer.deadLetter(second);
    expect(fake.framesOf('nack').map((frame) => frame.items)).toEqual([
      [{ receiptHandle: 'lease-1', deadLetter: true, reason: 'bad schema' }],
      [{ receiptHandle: 'lease-2', deadLetter: true }],
    ]);
    expect(await rejectionOf(consumer.deadLetter(first))).toMatchObject({
      code: 410,
      details: { messageId: first.messageId },
    });
  });

  it('refuses a reason over 1 024 characters before any I/O', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    expect(await rejectionOf(consumer.deadLetter(message, 'x'.repeat(1_025)))).toMatchObject({ code: 400 });
    expect(fake.framesOf('nack')).toEqual([]);
  });
});

describe('changeInvisibleDuration (S4)', () => {
  it('swaps the new receipt handle into the message, so a later ack uses it', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    await consumer.changeInvisibleDuration(message, 60_000);
    expect(fake.framesOf('changeInvisibleDuration')).toEqual([
      {
        type: 'changeInvisibleDuration',
        id: expect.any(Number),
        receiptHandle: 'lease-1',
        invisibleDurationMs: 60_000,
      },
    ]);
    await consumer.ack(message);
    expect(fake.framesOf('ack')[0]?.receiptHandles).toEqual(['lease-2']);
  });

  it('orders calls on one message: an ack right after a change waits for the new handle', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    const changes = [
      consumer.changeInvisibleDuration(message, 5_000),
      consumer.changeInvisibleDuration(message, 0),
    ];
    const acked = consumer.ack(message);
    await Promise.all([...changes, acked]);
    expect(fake.framesOf('changeInvisibleDuration').map((frame) => frame.receiptHandle)).toEqual([
      'lease-1',
      'lease-2',
    ]);
    expect(fake.framesOf('ack')[0]?.receiptHandles).toEqual(['lease-3']);
  });

  it('fails with 410 when the lease is gone and keeps the old handle', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    fake.leases.clear(); // the lease expired
    const error = await rejectionOf(consumer.changeInvisibleDuration(message, 1_000));
    expect(error).toMatchObject({ code: 410, retryable: false });
    expect(await rejectionOf(consumer.ack(message))).toMatchObject({ code: 410 });
    expect(fake.framesOf('ack')[0]?.receiptHandles).toEqual(['lease-1']);
  });
});

describe('local validation', () => {
  it.each([
    [0, 1_000],
    [33, 1_000],
    [1.5, 1_000],
    [1, 9],
    [1, TWELVE_HOURS_MS + 1],
    [1, Number.NaN],
  ])('refuses receive(%s, %s) with 400 before any I/O', async (maxMessages, invisibleDurationMs) => {
    const fake = await startBroker();
    const consumer = createConsumer(fake.endpoint);
    const error = await rejectionOf(consumer.receive(maxMessages, invisibleDurationMs));
    expect(error).toMatchObject({ name: 'ClientError', code: 400, retryable: false });
    expect(fake.connectionCount).toBe(0);
  });

  it('accepts the bounds of receive and changeInvisibleDuration', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(32, 10);
    if (message === undefined) throw new Error('no message');
    await consumer.receive(1, TWELVE_HOURS_MS);
    await consumer.changeInvisibleDuration(message, TWELVE_HOURS_MS);
    await consumer.changeInvisibleDuration(message, 0);
  });

  it.each([-1, TWELVE_HOURS_MS + 1, 0.5])(
    'refuses changeInvisibleDuration(%s) with 400',
    async (durationMs) => {
      const fake = await startBroker();
      const consumer = createConsumer(fake.endpoint);
      const message = new ReceivedMessage(FakeBroker.deliveredMessage());
      expect(await rejectionOf(consumer.changeInvisibleDuration(message, durationMs))).toMatchObject({
        code: 400,
      });
      expect(fake.connectionCount).toBe(0);
    },
  );

  it('refuses to ack something that is not a received message', async () => {
    const fake = await startBroker();
    const consumer = createConsumer(fake.endpoint);
    const forged = { messageId: 'x' } as unknown as ReceivedMessage;
    expect(await rejectionOf(consumer.ack(forged))).toMatchObject({ code: 400 });
    expect(fake.connectionCount).toBe(0);
  });

  it.each<[string, Partial<SimpleConsumerOptions>]>([
    ['a bad group', { group: 'no spaces' }],
    ['no subscriptions', { subscriptions: {} }],
    ['a bad topic', { subscriptions: { 'or ders': '*' } }],
    ['a bad tag expression', { subscriptions: { orders: 'a || *' } }],
    ['a long awaitDurationMs', { awaitDurationMs: 30_001 }],
    ['a bad endpoint', { endpoint: 'http://127.0.0.1:1' }],
  ])('refuses %s at construction with 400', (_, options) => {
    expect(
      () =>
        new SimpleConsumer({
          endpoint: 'ws://127.0.0.1:1',
          group: 'billing',
          subscriptions: { orders: '*' },
          ...options,
        }),
    ).toThrow(expect.objectContaining({ name: 'ClientError', code: 400 }));
  });
});

describe('close', () => {
  it('lets an in-flight ack finish, then refuses new calls', async () => {
    const fake = await startBroker();
    readyMessages(fake, 1);
    const answers: Array<() => void> = [];
    fake.on('ack', (frame, session) => {
      answers.push(() => session.send({ type: 'settled', id: frame.id, failures: [] }));
    });
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    const acking = consumer.ack(message);
    await fake.waitForFrames('ack');
    const closing = consumer.close();
    expect(consumer.close()).toBe(closing);
    for (const answer of answers) answer();
    await expect(acking).resolves.toBeUndefined();
    await closing;
    expect(consumer.connectionStatus.state).toBe('closed');
    expect((await rejectionOf(consumer.ack(message))).code).toBe('CLIENT_CLOSED');
  });

  it('closes through await using', async () => {
    const fake = await startBroker();
    let observed: SimpleConsumer | undefined;
    {
      await using consumer = new SimpleConsumer({
        endpoint: fake.endpoint,
        group: 'billing',
        subscriptions: { orders: '*' },
      });
      await consumer.start();
      observed = consumer;
    }
    expect(observed.connectionStatus.state).toBe('closed');
  });
});
