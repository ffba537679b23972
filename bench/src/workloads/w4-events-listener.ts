import { connect, type Socket } from 'node:net';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import type { BenchProcess } from '../processes.js';
import { type RetrySummary, runW4 } from './w4-retry.js';

/**
 * X7's cost to the broker: W4 on a topic that a second group also reads, every delivery of it
 * failing with `maxRetries: 0`, so that each of W4's messages is dead-lettered there too and makes
 * a `dead_lettered` event (its DLQ entry, body and all) — once with an events listener that never
 * reads its stream, once without. The listener's buffer fills, it is dropped, and W4's figures
 * should not move: the broker never waits for a listener.
 */
export interface EventsListenerSummary {
  readonly withoutListener: RetrySummary;
  readonly withStuckListener: RetrySummary;
}

export async function runW4EventsListener(
  broker: BenchProcess & { readonly endpoint: string },
): Promise<EventsListenerSummary> {
  const withoutListener = await withDeadLetters(broker, 'w4-events-none', () =>
    runW4(broker, 'w4-events-none'),
  );
  const stuck = await openStuckListener(broker.endpoint);
  try {
    const withStuckListener = await withDeadLetters(broker, 'w4-events-stuck', () =>
      runW4(broker, 'w4-events-stuck'),
    );
    return { withoutListener, withStuckListener };
  } finally {
    stuck.destroy();
  }
}

/** Run `w4` while a second group of `topic` dead-letters every message it is delivered. */
async function withDeadLetters<T>(
  broker: { readonly endpoint: string },
  topic: string,
  w4: () => Promise<T>,
): Promise<T> {
  const group = `${topic}-dead-letters`;
  await putGroup(broker.endpoint, group, { startFrom: 'earliest', maxRetries: 0 });
  const failing = new PushConsumer({
    endpoint: broker.endpoint,
    group,
    subscriptions: { [topic]: '*' },
    listener: () => ConsumeResult.FAILURE,
  });
  await failing.start();
  try {
    return await w4();
  } finally {
    await failing.close();
  }
}

/**
 * `GET /v1/events` on a raw socket that is never read: what a listener that hung looks like to
 * the broker once the kernel's buffers are full.
 */
async function openStuckListener(endpoint: string): Promise<Socket> {
  const { hostname, port } = new URL(endpoint.replace(/^ws/, 'http'));
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.pause();
  socket.write(`GET /v1/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  return socket;
}
