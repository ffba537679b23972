import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ConsumeResult } from '@ricochet/push-consumer';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { installTracing, type TestTracing } from './support/tracing.js';

const ATTEMPT = 'messaging.ricochet.message.delivery_attempt';
const OUTCOME = 'messaging.ricochet.outcome';

function startMs(span: ReadableSpan): number {
  return span.startTime[0] * 1_000 + span.startTime[1] / 1e6;
}

/** The send span and the process spans of one message, checked to be one trace linked to its send. */
function journeyOf(spans: readonly ReadableSpan[], messageId: string) {
  const mine = spans.filter((span) => span.attributes['messaging.message.id'] === messageId);
  const sends = mine.filter((span) => span.kind === SpanKind.PRODUCER);
  expect(sends).toHaveLength(1);
  const send = sends[0] as ReadableSpan;
  const { traceId, spanId } = send.spanContext();
  const processes = mine
    .filter((span) => span.kind === SpanKind.CONSUMER)
    .sort((a, b) => startMs(a) - startMs(b));
  for (const process of processes) {
    expect(process.links.map((link) => link.context.spanId)).toEqual([spanId]);
    expect(process.spanContext().traceId).toBe(traceId);
    expect(process.parentSpanContext?.spanId).toBe(spanId);
  }
  return { send, processes };
}

describe('tracing through retries (issue 35): one trace per message, send → every attempt', () => {
  let tracing: TestTracing;
  beforeAll(() => {
    tracing = installTracing();
  });
  afterAll(() => tracing[Symbol.asyncDispose]());
  beforeEach(() => tracing.reset());

  it('push: a message that fails twice, then succeeds, is 1 send span and 3 linked process spans', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      maxRetries: 5,
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    const activeInListener: (string | undefined)[] = [];
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      async (message) => {
        // After an await, as a listener doing I/O: its own spans would be children of the attempt's.
        await Promise.resolve();
        activeInListener.push(trace.getActiveSpan()?.spanContext().spanId);
        if (message.deliveryAttempt === 1) throw new Error('the payment service is down');
        if (message.deliveryAttempt === 2) return ConsumeResult.FAILURE;
        return ConsumeResult.SUCCESS;
      },
    );
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    await consumer.delivered(3);
    const { send, processes } = journeyOf(await tracing.ended(4), messageId);

    expect(send.name).toBe('send orders');
    expect(send.attributes).toMatchObject({
      'messaging.system': 'ricochet',
      'messaging.destination.name': 'orders',
      'messaging.operation.type': 'send',
      'messaging.ricochet.send.attempts': 1,
    });
    // W3C trace context travelled in the message's properties.
    const { traceId, spanId } = send.spanContext();
    expect(consumer.deliveries[0]?.message.properties.traceparent).toBe(`00-${traceId}-${spanId}-01`);

    expect(processes.map((span) => span.name)).toEqual([
      'process orders',
      'process orders',
      'process orders',
    ]);
    expect(processes.map((span) => span.attributes[ATTEMPT])).toEqual([1, 2, 3]);
    expect(processes.map((span) => span.attributes[OUTCOME])).toEqual(['failure', 'failure', 'success']);
    expect(processes.map((span) => span.status.code)).toEqual([
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.UNSET,
    ]);
    expect(processes.map((span) => span.attributes['error.type'])).toEqual(['Error', 'failure', undefined]);
    expect(processes[0]?.status.message).toBe('the payment service is down');
    expect(activeInListener).toEqual(processes.map((span) => span.spanContext().spanId));
    expect(processes[0]?.attributes).toMatchObject({
      'messaging.system': 'ricochet',
      'messaging.destination.name': 'orders',
      'messaging.operation.type': 'process',
      'messaging.message.id': messageId,
      'messaging.consumer.group.name': 'billing',
    });
  });

  it('push: retryAfter and deadLetter outcomes; a message past maxRetries shows failures, then its DLQ read', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      maxRetries: 1,
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      (message) => {
        const body = message.text();
        if (body === 'poison') return ConsumeResult.deadLetter('unparseable');
        if (body === 'slow' && message.deliveryAttempt === 1) return ConsumeResult.retryAfter(10);
        return body === 'slow' ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
      },
    );
    await using producer = await startProducer(broker.endpoint);
    const slow = await producer.send({ topic: 'orders', body: 'slow' });
    const poison = await producer.send({ topic: 'orders', body: 'poison' });
    const doomed = await producer.send({ topic: 'orders', body: 'doomed' });
    await consumer.delivered(5);
    // 3 sends; slow: 2 attempts; poison: 1; doomed: 2 (maxRetries 1), then the DLQ read below.
    await broker.admin.putGroup('ops', { startFrom: 'earliest' });
    await using dlqReader = await startSimpleConsumer(broker.endpoint, {
      group: 'ops',
      subscriptions: { '%DLQ%billing': '*' },
    });
    const dead = await dlqReader.receive(2, 30_000);
    for (const message of dead) await dlqReader.ack(message);
    const spans = await tracing.ended(3 + 5 + 2);

    const outcomes = (messageId: string) =>
      journeyOf(spans, messageId).processes.map((span) => [
        span.attributes[ATTEMPT],
        span.attributes[OUTCOME],
      ]);
    expect(outcomes(slow.messageId)).toEqual([
      [1, 'retry_after'],
      [2, 'success'],
    ]);
    // A message in the DLQ keeps its properties (D1), so reading it there continues its trace.
    expect(outcomes(poison.messageId)).toEqual([
      [1, 'dead_lettered'],
      [1, 'success'],
    ]);
    // The client cannot tell the last failure from another: the broker dead-letters it (P4) and
    // says nothing back. Its DLQ read is the next span of the same trace.
    const doomedJourney = journeyOf(spans, doomed.messageId);
    expect(
      doomedJourney.processes.map((span) => [
        span.attributes['messaging.destination.name'],
        span.attributes['messaging.consumer.group.name'],
        span.attributes[OUTCOME],
      ]),
    ).toEqual([
      ['orders', 'billing', 'failure'],
      ['orders', 'billing', 'failure'],
      ['%DLQ%billing', 'ops', 'success'],
    ]);
  });

  it('simple: lease expired → changeInvisibleDuration(0) → ack are failure, retry_after, success', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 5 });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
    });
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'work' });

    const [first] = await consumer.receive(1, 30);
    expect(first?.deliveryAttempt).toBe(1);
    // Not acked: its 30 ms lease runs out and the long poll below gets it again.
    const [second] = await consumer.receive(1, 30_000);
    if (second === undefined) throw new Error('no redelivery');
    expect(second.deliveryAttempt).toBe(2);
    await consumer.changeInvisibleDuration(second, 0);
    const [third] = await consumer.receive(1, 30_000);
    if (third === undefined) throw new Error('no third delivery');
    await consumer.ack(third);
    const { processes } = journeyOf(await tracing.ended(4), messageId);

    expect(processes.map((span) => [span.attributes[ATTEMPT], span.attributes[OUTCOME]])).toEqual([
      [1, 'failure'],
      [2, 'retry_after'],
      [3, 'success'],
    ]);
    expect(processes[0]?.attributes['error.type']).toBe('lease_expired');
    expect(processes[1]?.events.map((event) => event.name)).toEqual(['ricochet.invisible_duration_changed']);
  });
});
