import { BrokerError } from '@ricochet/protocol';
import { beforeEach, describe, expect, it } from 'vitest';
import { queueOf } from './queue-addressing.js';
import { ids, QUEUES, type RemoteRouter, remoteRouterFixture } from './remote-router.test-support.js';
import { ADMIN_REROUTES, SEND_REROUTES } from './reroute-waits.js';

const REROUTE_WAIT_MS = SEND_REROUTES.waitMs;

/**
 * The router with a queue another broker owns (`remote-router.test-support.ts`) while that queue
 * moves: sends, admin writes and reads that meet it between owners, or whose owner goes away
 * mid-call, wait for its next route (`reroute-waits.ts`).
 */
const remote = remoteRouterFixture();
const { routeQueue1ToOwnerAgain, send } = remote;
let owner: RemoteRouter['owner'];
let connection: RemoteRouter['connection'];
let router: RemoteRouter['router'];
beforeEach(() => {
  ({ owner, connection, router } = remote.current());
});

describe('PartitionRouter while a queue another broker owns moves', () => {
  it('holds a send that meets a queue between owners until the queue has its next owner, and sends it there', async () => {
    const [id] = ids(6).filter((candidate) => queueOf({ messageId: candidate }, QUEUES) === 1);
    await router.replaceQueue(1, undefined);
    const startedAt = performance.now();
    const sending = send([id as string]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await routeQueue1ToOwnerAgain();
    expect(await sending).toEqual([expect.objectContaining({ ok: true, messageId: id })]);
    expect(performance.now() - startedAt).toBeLessThan(REROUTE_WAIT_MS);
  });

  it('holds the admin writes that meet a queue between owners until it has its next owner, and makes them there', async () => {
    await router.replaceQueue(1, undefined);
    const startedAt = performance.now();
    const writes = Promise.all([
      router.putTopic('audit', { type: 'fifo' }),
      router.putGroup('ledger', { maxRetries: 2 }),
      router.pauseGroup('billing', true),
    ]);
    // Each write has met the queue between owners (503) and waits: the rejections are settled
    // in microtasks, which all run before the next turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    await routeQueue1ToOwnerAgain();
    const [topic, group, paused] = await writes;
    // Woken by the new route, not by the end of the wait.
    expect(performance.now() - startedAt).toBeLessThan(ADMIN_REROUTES.budgetMs);
    expect(topic).toMatchObject({ name: 'audit', config: { type: 'fifo' } });
    expect(group).toMatchObject({ name: 'ledger', config: { maxRetries: 2 } });
    expect(paused).toMatchObject({ name: 'billing', pause: { manuallyPaused: true } });
    // Made on the owner of queue 1 too, not only on this router's own queue.
    const ownerAdmin = `http://127.0.0.1:${owner.address?.port}`;
    expect(await (await fetch(`${ownerAdmin}/v1/groups/ledger`)).json()).toMatchObject({
      config: { maxRetries: 2 },
    });
    expect(await (await fetch(`${ownerAdmin}/v1/topics/audit`)).json()).toMatchObject({
      config: { type: 'fifo' },
    });
    expect(await (await fetch(`${ownerAdmin}/v1/groups/billing`)).json()).toMatchObject({
      pause: { manuallyPaused: true },
    });
  });

  it("answers an admin read whose owner's session closed mid-call from the queue's next route, not with 503", async () => {
    await router.putGroup('ledger', { maxRetries: 2 });
    // The session to queue 1's owner goes away: a read made on it now fails there (503) and waits
    // for the queue's next route, as the broker's ownership would give it once it saw the owner.
    await connection.close();
    const startedAt = performance.now();
    const reads = Promise.all([
      router.describeGroup('ledger'),
      router.listGroups(undefined, 10),
      router.describeTopic('orders'),
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    await routeQueue1ToOwnerAgain();
    const [group, groups] = await reads;
    expect(performance.now() - startedAt).toBeLessThan(ADMIN_REROUTES.budgetMs);
    // Both queues' shares: the owner's answered on the new session.
    expect(group).toMatchObject({ name: 'ledger', config: { maxRetries: 2 } });
    expect(groups.items.map((view) => view.name)).toEqual(['billing', 'ledger']);
  });

  it('answers an admin write 503 BROKER_UNAVAILABLE, its catalogue code, when the waits end without an owner', async () => {
    await router.replaceQueue(1, undefined);
    const writing = router.putGroup('ledger', { maxRetries: 2 }).catch((error: unknown) => error);
    // The write met queue 1 between owners and waits (see above); draining ends the wait as its
    // bound would (`ADMIN_REROUTES`, 5 s: its budget is tested in `reroute-waits.test.ts`).
    await new Promise((resolve) => setImmediate(resolve));
    const drainedAt = performance.now();
    router.drain();
    const failure = await writing;
    expect(failure).toBeInstanceOf(BrokerError);
    expect(failure).toMatchObject({ code: 503, errorName: 'BROKER_UNAVAILABLE', details: { queue: 1 } });
    expect(performance.now() - drainedAt).toBeLessThan(ADMIN_REROUTES.waitMs / 2);
  });

  it('answers 503 once a queue between owners found none within the wait, and at once when the router drains', async () => {
    const [first, second] = ids(6).filter((candidate) => queueOf({ messageId: candidate }, QUEUES) === 1);
    await router.replaceQueue(1, undefined);
    const startedAt = performance.now();
    expect(await send([first as string])).toEqual([
      { ok: false, messageId: first, error: expect.objectContaining({ code: 503 }) },
    ]);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(REROUTE_WAIT_MS - 2);
    const sending = send([second as string]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const drainedAt = performance.now();
    router.drain();
    expect(await sending).toEqual([
      { ok: false, messageId: second, error: expect.objectContaining({ code: 503 }) },
    ]);
    expect(performance.now() - drainedAt).toBeLessThan(REROUTE_WAIT_MS / 2);
  });
});
