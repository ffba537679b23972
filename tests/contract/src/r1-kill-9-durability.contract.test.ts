import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startChildBroker } from './support/child-broker.js';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startBroker } from './support/test-broker.js';

describe('R1: once send resolved, the message survives kill -9 of the broker', () => {
  it('keeps every acknowledged message exactly once across a SIGKILL in the middle of a stream of sends', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-crash-'));
    const acknowledged = new Set<string>();
    try {
      {
        await using child = await startChildBroker(dataDir);
        const producer = await startProducer(child.endpoint, { maxAttempts: 1, requestTimeoutMs: 2_000 });
        // 32 senders in a loop until the broker dies: sends are in flight when SIGKILL lands.
        let killed = false;
        let reachedTarget: () => void = () => {};
        const enoughAcknowledged = new Promise<void>((resolve) => (reachedTarget = resolve));
        const senders = Array.from({ length: 32 }, async (_, sender) => {
          for (let i = 0; i < 1_000 && !killed; i++) {
            try {
              const { messageId } = await producer.send({ topic: 'orders', body: `s${sender}-${i}` });
              acknowledged.add(messageId);
              if (acknowledged.size === 500) reachedTarget();
            } catch {
              return;
            }
          }
        });
        await enoughAcknowledged;
        killed = true;
        await child.kill9();
        await producer.close({ drainTimeoutMs: 0 });
        await Promise.all(senders);
      }
      expect(acknowledged.size).toBeGreaterThanOrEqual(500);

      await using broker = await startBroker({}, dataDir);
      await broker.admin.putGroup('audit', { startFrom: 'earliest' });
      await using consumer = await startSimpleConsumer(broker.endpoint, {
        group: 'audit',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      const seen = new Map<string, number>();
      for (let round = 0; round < 1_000; round++) {
        const batch = await consumer.receive(32, 60_000);
        if (batch.length === 0) break;
        for (const message of batch) seen.set(message.messageId, (seen.get(message.messageId) ?? 0) + 1);
      }
      const missing = [...acknowledged].filter((id) => !seen.has(id));
      const duplicated = [...seen].filter(([, count]) => count > 1);
      expect({ missing, duplicated }).toEqual({ missing: [], duplicated: [] });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
