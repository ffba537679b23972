import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startChildBroker } from './support/child-broker.js';
import { startBroker } from './support/test-broker.js';

const CONFIGS = 20;

describe('a topic or group config the admin API confirmed survives kill -9 of the broker', () => {
  it('keeps every PUT answered before the SIGKILL', { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-admin-crash-'));
    try {
      {
        await using child = await startChildBroker(dataDir);
        const admin = new AdminApi(child.endpoint.replace(/^ws/, 'http'));
        // Many at once and the kill right after the last answer: an answer given before the
        // write is durable would leave some of them behind.
        await Promise.all(
          Array.from({ length: CONFIGS }, async (_, i) => {
            await admin.putTopic(`audit-${i}`, { type: 'fifo' });
            await admin.putGroup(`billing-${i}`, { startFrom: 'earliest', maxRetries: 3 });
          }),
        );
        await child.kill9();
      }
      await using broker = await startBroker({}, dataDir);
      for (let i = 0; i < CONFIGS; i++) {
        expect((await broker.admin.getTopic(`audit-${i}`)).config).toMatchObject({ type: 'fifo' });
        expect((await broker.admin.getGroup(`billing-${i}`)).config).toMatchObject({
          startFrom: 'earliest',
          maxRetries: 3,
        });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
