import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, buildBroker } from '@ricochet/broker';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { DASHBOARD_DIST } from './paths.js';

/** A real broker on 127.0.0.1:0 with a temp data dir, serving the freshly built dashboard. */
export interface RunningBroker {
  readonly broker: Broker;
  /** `http://127.0.0.1:<port>` */
  readonly httpUrl: string;
  readonly endpoint: string;
  admin<T>(method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown): Promise<T>;
  close(): Promise<void>;
}

export async function startBroker(): Promise<RunningBroker> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-dashboard-e2e-'));
  const broker = await buildBroker({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    logLevel: 'silent',
    uiDir: DASHBOARD_DIST,
  });
  const { port, url } = await broker.listen();
  const httpUrl = `http://127.0.0.1:${port}`;
  return {
    broker,
    httpUrl,
    endpoint: url,
    async admin<T>(method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown): Promise<T> {
      const response = await fetch(`${httpUrl}${path}`, {
        method,
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    },
    async close() {
      await broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Send `count` JSON messages to `topic` with a real producer; returns their ids. */
export async function sendMessages(
  endpoint: string,
  topic: string,
  bodies: readonly unknown[],
  properties: Readonly<Record<string, string>> = {},
): Promise<string[]> {
  const producer = new Producer({ endpoint });
  await producer.start();
  try {
    const ids: string[] = [];
    for (const body of bodies) {
      const { messageId } = await producer.send({
        topic,
        body: new TextEncoder().encode(JSON.stringify(body)),
        tag: 'created',
        properties,
      });
      ids.push(messageId);
    }
    return ids;
  } finally {
    await producer.close();
  }
}

/**
 * A real push consumer whose listener fails every delivery while `failing` is true (with a reason
 * the dashboard shows) and commits once it is false; it remembers what it committed.
 */
export class SwitchableConsumer {
  failing = true;
  readonly committed = new Set<string>();
  readonly #consumer: PushConsumer;

  constructor(endpoint: string, group: string, topic: string) {
    this.#consumer = new PushConsumer({
      endpoint,
      group,
      clientId: 'e2e-worker-1',
      subscriptions: { [topic]: '*' },
      // The failures are the point of the test; the broker records their reason.
      onListenerError: () => {},
      listener: async (message) => {
        if (this.failing) throw new Error('payment service unavailable');
        this.committed.add(message.messageId);
        return ConsumeResult.SUCCESS;
      },
    });
  }

  start(): Promise<void> {
    return this.#consumer.start();
  }

  close(): Promise<void> {
    return this.#consumer.close();
  }
}

/** Poll `check` until it is true, at most `timeoutMs`: waits for a condition, never for a fixed time. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let round = 0; round < 10_000; round++) {
    if (await check()) return;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
