import type { DeliveredMessage } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import type { BrokerService } from '../../engine/index.js';
import { RocketPushConsumers, SILENT_CLIENT_MS } from './rocketmq-push.js';

/** The calls a push consumer makes of the engine, recorded; deliveries are handed to its sink. */
function recordingEngine() {
  const calls: string[] = [];
  let sink: ((id: number, messages: DeliveredMessage[]) => void) | undefined;
  const engine = {
    subscribe(request: { sink: typeof sink }) {
      sink = request.sink;
      calls.push('subscribe');
      return 7;
    },
    credit(id: number, credits: number) {
      calls.push(`credit ${id} ${credits}`);
    },
    endSubscriptions(ids: readonly number[]) {
      calls.push(`end ${ids.join(',')}`);
    },
  } as unknown as BrokerService;
  const deliver = (...handles: string[]) =>
    sink?.(
      7,
      handles.map((receiptHandle) => ({ receiptHandle }) as DeliveredMessage),
    );
  return { engine, calls, deliver };
}

const receive = (clientId: string, maxMessages = 32) => ({
  clientId,
  group: 'billing',
  topic: 'orders',
  expression: '*',
  maxMessages,
  awaitDurationMs: 0,
  signal: new AbortController().signal,
});

describe('RocketMQ push consumers', () => {
  it('credits the engine with what the last receive took, and no more', async () => {
    const { engine, calls, deliver } = recordingEngine();
    const now = { value: 0 };
    const consumers = new RocketPushConsumers(engine, { now: () => now.value });
    expect(await consumers.receive(receive('c1'))).toEqual([]);
    deliver('h1', 'h2', 'h3');
    expect((await consumers.receive(receive('c1', 2))).map((m) => m.receiptHandle)).toEqual(['h1', 'h2']);
    expect((await consumers.receive(receive('c1', 2))).map((m) => m.receiptHandle)).toEqual(['h3']);
    expect(calls).toEqual(['subscribe', 'credit 7 2']);
    expect(consumers.isPushDelivery('h1')).toBe(true);
    consumers.settled(['h1']);
    expect(consumers.isPushDelivery('h1')).toBe(false);
    consumers.closeAll();
  });

  it('ends a client when its last Telemetry stream goes (C2), not before', async () => {
    const { engine, calls } = recordingEngine();
    const consumers = new RocketPushConsumers(engine, { now: () => 0 });
    consumers.streamOpened('c1');
    consumers.streamOpened('c1');
    await consumers.receive(receive('c1'));
    consumers.streamClosed('c1');
    expect(calls).toEqual(['subscribe']);
    consumers.streamClosed('c1');
    expect(calls).toEqual(['subscribe', 'end 7']);
    consumers.closeAll();
  });

  it('ends a client with no Telemetry stream that has not received for SILENT_CLIENT_MS', async () => {
    const { engine, calls } = recordingEngine();
    const now = { value: 1_000 };
    const consumers = new RocketPushConsumers(engine, { now: () => now.value });
    await consumers.receive(receive('quiet'));
    now.value += SILENT_CLIENT_MS;
    consumers.endSilentClients();
    expect(calls).toEqual(['subscribe']);
    now.value += 1;
    consumers.endSilentClients();
    expect(calls).toEqual(['subscribe', 'end 7']);
    // A client with an open stream is alive however long it waits between receives.
    consumers.streamOpened('live');
    await consumers.receive(receive('live'));
    now.value += 10 * SILENT_CLIENT_MS;
    consumers.endSilentClients();
    expect(calls).toEqual(['subscribe', 'end 7', 'subscribe']);
    consumers.closeAll();
  });
});
