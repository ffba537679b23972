import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import { startTestBroker } from '../../broker.test-support.js';
import { resolveBrokerConfig } from '../../config.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import { peerAdminCalls } from '../peers/peer-admin.js';
import { PeerConnection } from '../peers/peer-connection.js';
import { RemoteQueue } from '../peers/remote-queue.js';
import { PartitionRouter } from './partition-router.js';
import { queueOf } from './queue-addressing.js';

const PEER_TOKEN = 'peer-token-for-tests';
/** The router's queues: queue 0 its own, queue 1 the owner's. */
export const QUEUES = 2;

/** What a test of the router with a remote queue works with, made anew before each test. */
export interface RemoteRouter {
  readonly dir: string;
  /** The broker that owns queue 1 (its only queue, queue 0 of its store). */
  readonly owner: Awaited<ReturnType<typeof startTestBroker>>;
  /** The router's session with the owner. */
  readonly connection: PeerConnection;
  readonly router: PartitionRouter;
}

/**
 * A router over two queues, queue 0 its own and queue 1 another broker's (the owner, whose only
 * queue it is), reached over a real session between brokers: made before each test of the file
 * that calls this, with group `billing` (earliest, retried after 20 ms), and closed after it.
 * `current()` is the test's.
 */
export function remoteRouterFixture() {
  let current: RemoteRouter | undefined;
  beforeEach(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-router-remote-'));
    const owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const connection = await openSession(owner.url);
    const router = new PartitionRouter(
      [
        openLmdbStore({ path: join(dir, 'q0'), flushPolicy: 'commit' }),
        { messaging: new RemoteQueue(1, connection), admin: peerAdminCalls(connection) },
      ],
      { config: resolveBrokerConfig({ dataDir: dir }) },
    );
    router.start();
    await router.putGroup('billing', { startFrom: 'earliest', retryPolicy: { type: 'fixed', delayMs: 20 } });
    current = { dir, owner, connection, router };
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    if (current === undefined) return;
    await current.router.close();
    await current.connection.close();
    await current.owner.close();
    rmSync(current.dir, { recursive: true, force: true });
    current = undefined;
  });
  const now = (): RemoteRouter => {
    if (current === undefined) throw new Error('the remote router is made before each test');
    return current;
  };
  return {
    current: now,
    /** Route queue 1 to its owner again, over a new session, as a broker does once it finds the owner. */
    routeQueue1ToOwnerAgain: async (): Promise<void> => {
      const again = await openSession(now().owner.url);
      await now().router.replaceQueue(1, {
        messaging: new RemoteQueue(1, again),
        admin: peerAdminCalls(again),
      });
    },
    /** Send one message of each id to `orders` through the router. */
    send: (messageIds: readonly string[]) =>
      now().router.send(messageIds.map((messageId) => ({ messageId, topic: 'orders', body, bornAt: 1 }))),
  };
}

const body = new Uint8Array([1]);

/** Ids that go to queue 0 and to queue 1, alternately. */
export function ids(count: number): string[] {
  const inQueue: [string[], string[]] = [[], []];
  for (let i = 0; inQueue[0].length + inQueue[1].length < count && i < 10_000; i++) {
    const id = `m-${i}`;
    const found = inQueue[queueOf({ messageId: id }, QUEUES) as 0 | 1];
    if (found.length < Math.ceil(count / 2)) found.push(id);
  }
  return [...inQueue[0], ...inQueue[1]].slice(0, count);
}

function openSession(url: string): Promise<PeerConnection> {
  return PeerConnection.open({
    url,
    token: PEER_TOKEN,
    queue: 0,
    clientId: 'peer:router',
    maxFrameBytes: 8 * 1024 * 1024,
  });
}
