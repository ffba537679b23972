import { readyNumberedMessages, rejectionOf } from '@ricochet/client-testkit';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { simpleConsumersPerTest } from './simple-consumer.fixture.js';

const { brokers, createConsumer } = simpleConsumersPerTest();

describe('ack (S3)', () => {
  it('commits with the receipt handle of the message, and fails with 410 the second time', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
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
    const fake = await brokers.start();
    readyNumberedMessages(fake, 3);
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
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    fake.on('ack', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 500, message: 'broken' }),
    );
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    expect(await rejectionOf(consumer.ack(message))).toMatchObject({ code: 500, retryable: true });
    expect(fake.framesOf('ack')).toHaveLength(1);
  });

  it('retries an ack answered 503 (its queue between owners), as a frame error or a per-handle failure', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    let attempt = 0;
    fake.on('ack', (frame, session) => {
      attempt += 1;
      if (attempt === 1) session.send({ type: 'error', id: frame.id, code: 503, message: 'between owners' });
      else if (attempt === 2)
        session.send({
          type: 'settled',
          id: frame.id,
          failures: [{ index: 0, code: 503, message: 'queue 0 is between owners; try again' }],
        });
      else session.send({ type: 'settled', id: frame.id, failures: [] });
    });
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    await consumer.ack(message);
    expect(fake.framesOf('ack').map((frame) => frame.receiptHandles)).toEqual([
      ['lease-1'],
      ['lease-1'],
      ['lease-1'],
    ]);
  });

  it('fails an ack with the last 503 once unavailableRetryMs has passed, and at once with 0', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 2);
    fake.on('ack', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 503, message: `between owners ${frame.id}` }),
    );
    const consumer = createConsumer(fake.endpoint, { unavailableRetryMs: 200 });
    const [first, second] = await consumer.receive(2, 5_000);
    if (first === undefined || second === undefined) throw new Error('no message');
    const startedAt = performance.now();
    const error = await rejectionOf(consumer.ack(first));
    expect(performance.now() - startedAt).toBeLessThan(200 + 100);
    expect(error).toMatchObject({ code: 503, retryable: true });
    // 25 + 50 ms (±20 %) fit in 200 ms, then 100 ms may or may not: 3 or 4 attempts.
    expect(fake.framesOf('ack').length).toBeGreaterThanOrEqual(3);
    expect(fake.framesOf('ack').length).toBeLessThanOrEqual(4);

    const once = createConsumer(fake.endpoint, { unavailableRetryMs: 0 });
    const before = fake.framesOf('ack').length;
    expect(await rejectionOf(once.ack(second))).toMatchObject({ code: 503 });
    expect(fake.framesOf('ack')).toHaveLength(before + 1);
  });

  it('stops retrying an ack when its signal fires', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    fake.on('ack', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 503, message: 'between owners' }),
    );
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 5_000);
    if (message === undefined) throw new Error('no message');
    const controller = new AbortController();
    const acking = consumer.ack(message, { signal: controller.signal });
    await fake.waitForFrames('ack', 2);
    controller.abort();
    expect(await rejectionOf(acking)).toMatchObject({ code: 'ABORTED' });
  });
});

describe('deadLetter (D3)', () => {
  it('sends the lease to the DLQ with its reason, and fails with 410 once it is settled', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 2);
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
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    expect(await rejectionOf(consumer.deadLetter(message, 'x'.repeat(1_025)))).toMatchObject({ code: 400 });
    expect(fake.framesOf('nack')).toEqual([]);
  });
});

describe('changeInvisibleDuration (S4)', () => {
  it('swaps the new receipt handle into the message, so a later ack uses it', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
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
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
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
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
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
