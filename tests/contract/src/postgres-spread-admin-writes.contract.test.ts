import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChildBroker } from './support/child-broker.js';
import { adminRequest } from './support/security.js';
import {
  adminOf,
  pickRoles,
  readCluster,
  startSpreadCluster,
  untilRoutedToLiveOwners,
} from './support/spread-cluster.js';

/**
 * Issue 42 item 4 (DESIGN.md §9): admin writes ride through queue moves, as sends do. A
 * `PUT /v1/groups/:group` is made in every queue, on each queue's owner; one it meets between
 * owners (brokers just started and still handing queues over, or an owner just killed) waits for
 * the queue's next owner within the sends' bound and is made there, instead of answering
 * `503 queue N is between owners` at once. Each request below is one `fetch`: the client never
 * retries, so a `503` the broker let through fails the test.
 */
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `PUT /v1/groups/<group>` through `broker`, once: its status, its body and how long it took. */
async function putGroupOnce(broker: ChildBroker, group: string, maxRetries: number) {
  const startedAt = performance.now();
  const response = await adminRequest(broker.endpoint, 'PUT', `/v1/groups/${group}`, {
    body: { maxRetries },
  });
  return { status: response.status, body: await response.text(), tookMs: performance.now() - startedAt };
}

describe('§9: admin writes ride through queue moves', () => {
  it('a PUT of a group succeeds without a retry right after the owner of some queues is killed', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { brokers } = cluster;
    // An owner dies: its queues are between owners until another broker takes them.
    await untilRoutedToLiveOwners(brokers, 60_000);
    const { target, targetQueues, producerBroker: survivor } = await pickRoles(brokers);
    await target.kill9();
    const killedAt = performance.now();
    // The write below meets those queues before a new owner serves them: were it not held, it
    // would be answered 503 (the dead owner refuses the connection, or nobody owns the queue).
    const before = await readCluster(survivor);
    const servedAgain = before?.routes.filter(
      (route) =>
        targetQueues.includes(route.queue) &&
        (route.to === 'here' || (route.to === 'elsewhere' && route.url !== target.endpoint)),
    );
    expect(servedAgain, 'a new owner served the queues before the write was made').toEqual([]);
    const afterKill = await putGroupOnce(survivor, 'after-kill', 7);
    expect(afterKill.status, afterKill.body).toBe(200);
    console.log(
      `admin write right after kill -9 of the owner of queues ${targetQueues.join(', ')}, ${Math.round(afterKill.tookMs)} ms ` +
        `(${Math.round(performance.now() - killedAt)} ms after the kill)`,
    );

    // Made in every queue: each live broker describes the group with its config.
    for (const broker of brokers.filter((candidate) => candidate !== target)) {
      expect((await adminOf(broker).getGroup('after-kill')).config.maxRetries).toBe(7);
    }
    // Three brokers started and settled on a loaded 2-core machine: tens of seconds, not the default.
  }, 180_000);
});
