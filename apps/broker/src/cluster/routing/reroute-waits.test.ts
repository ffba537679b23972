import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { type RerouteBound, RerouteWaits } from './reroute-waits.js';
import { PendingQueue, type RoutedQueue } from './routed-queue.js';

/** One queue, routed to what `routes[0]` holds now: the test routes it anew by hand. */
function oneQueue() {
  const routes: RoutedQueue[] = [new PendingQueue(0)];
  const waits = new RerouteWaits((queue) => routes[queue]);
  const reroute = () => {
    routes[0] = new PendingQueue(0);
    waits.rerouted(0);
  };
  return { routes, waits, reroute };
}

describe('RerouteWaits', () => {
  it('makes a request again on each next route, at most maxReroutes times', async () => {
    const { waits, reroute } = oneQueue();
    const bound: RerouteBound = { maxReroutes: 2, waitMs: 10_000, budgetMs: 10_000 };
    const tried: RoutedQueue[] = [];
    const done = waits.onEachRoute(
      0,
      async (routed) => {
        tried.push(routed);
        // Each try is refused (between owners); the test routes the queue anew right after it.
        queueMicrotask(reroute);
        return true;
      },
      bound,
    );
    await done;
    expect(tried).toHaveLength(1 + bound.maxReroutes);
    expect(new Set(tried).size).toBe(tried.length);
  });

  it('stops once the budget of all the waits is spent, however often the queue is routed anew', async () => {
    const { waits, reroute } = oneQueue();
    const bound: RerouteBound = { maxReroutes: 1_000, waitMs: 60, budgetMs: 150 };
    const startedAt = performance.now();
    let tries = 0;
    await waits.onEachRoute(
      0,
      async () => {
        tries++;
        // Routed anew 40 ms later each time: within one wait, so only the budget stops the tries.
        setTimeout(reroute, 40);
        return true;
      },
      bound,
    );
    const tookMs = performance.now() - startedAt;
    expect(tookMs).toBeGreaterThanOrEqual(bound.budgetMs - 2);
    // A loaded machine runs timers late, never early: at most one try per 40 ms of the budget.
    expect(tries).toBeLessThanOrEqual(1 + Math.ceil(bound.budgetMs / 40));
    expect(tries).toBeGreaterThanOrEqual(2);
  });

  it('answers an admin call with the last 503 of a queue that found no owner, once stopped', async () => {
    const { waits } = oneQueue();
    const calling = waits
      .onOwner(0, (routed) => routed.admin('putGroup', 'ledger', {}))
      .catch((error: unknown) => error);
    await new Promise((resolve) => setImmediate(resolve));
    waits.stop();
    expect(await calling).toMatchObject({ code: 503, message: 'queue 0 is between owners; try again' });
    expect(await calling).toBeInstanceOf(BrokerError);
  });

  it('answers an admin call at once with an error other than 503, without waiting', async () => {
    const { waits } = oneQueue();
    let calls = 0;
    const refusal = BrokerError.of('BAD_REQUEST', 'no');
    const failure = await waits
      .onOwner(0, async () => {
        calls++;
        throw refusal;
      })
      .catch((error: unknown) => error);
    expect(failure).toBe(refusal);
    expect(calls).toBe(1);
  });
});
