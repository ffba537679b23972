import { describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from '../broker.test-support.js';
import { readinessOf } from './health-routes.js';

describe('readinessOf', () => {
  it('is ready while accepting with every queue owned', () => {
    expect(readinessOf({ accepting: () => true, queuesWithoutOwner: () => [] })).toEqual({ status: 'ready' });
  });

  it('names the queues without an owner', () => {
    expect(readinessOf({ accepting: () => true, queuesWithoutOwner: () => [1, 3] })).toEqual({
      status: 'unowned',
      reason:
        'queues 1, 3 without an owner yet: their requests wait for one, and are answered 503 if none comes in time',
      queuesWithoutOwner: [1, 3],
    });
    expect(readinessOf({ accepting: () => true, queuesWithoutOwner: () => [2] }).reason).toMatch(/^queue 2 /);
  });

  it('says draining first, whatever the queues', () => {
    expect(readinessOf({ accepting: () => false, queuesWithoutOwner: () => [0] })).toEqual({
      status: 'draining',
      reason: 'the broker is shutting down',
    });
  });
});

describe('GET /readyz on the embedded store', () => {
  it('answers 200 as soon as the broker listens: its store opened before', async () => {
    await using broker = await startTestBroker();
    const response = await fetch(`http://127.0.0.1:${broker.address?.port}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready' });
    // What an orchestrator waits for before sending work: an admin write goes through at once.
    await putGroup(broker, 'billing', { maxRetries: 2 });
  });
});
