import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ClusterHealth } from './cluster-health.js';
import { registerClusterRoutes } from './cluster-routes.js';
import type { ClusterView } from './cluster-view.js';

const broker = (brokerId: string, advertiseUrl: string) => ({
  brokerId,
  advertiseUrl,
  advertiseTcpUrl: undefined,
  storeQueues: 2,
  expiresInMs: 900,
  assignedQueues: [],
  standbyQueues: [],
  ownedQueues: [],
});
const VIEW: ClusterView = {
  brokers: [broker('a', 'ws://a:7720'), broker('b', 'ws://b:7720'), broker('c', 'ws://c:7720')],
  queues: [],
};

/** A health tracker of broker `a` on a hand-turned clock, whose probes the test answers. */
function tracker() {
  let nowMs = 10_000;
  const pending = new Map<string, { resolve: () => void; reject: (error: Error) => void }>();
  const health = new ClusterHealth({
    me: 'a',
    staleAfterMs: 1_000,
    probeEveryMs: 250,
    now: () => nowMs,
    probe: (url) => new Promise<void>((resolve, reject) => pending.set(url, { resolve, reject })),
  });
  const settle = async (url: string, answered: boolean) => {
    const probe = pending.get(url);
    pending.delete(url);
    if (answered) probe?.resolve();
    else probe?.reject(new Error('timed out'));
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { health, pending, settle, advance: (ms: number) => (nowMs += ms) };
}

describe('ClusterHealth', () => {
  it('knows no contact and no peer before the first read, then the peers the view names, never itself', () => {
    const { health, pending } = tracker();
    expect(health.self()).toEqual({
      brokerId: 'a',
      database: { reachable: false, lastContactAgoMs: undefined, lastError: undefined },
      peers: [],
    });
    health.viewRead(VIEW);
    health.probeAll();
    expect([...pending.keys()]).toEqual(['ws://b:7720', 'ws://c:7720']);
    expect(health.self().database).toEqual({ reachable: true, lastContactAgoMs: 0, lastError: undefined });
    expect(health.self().peers.map((peer) => [peer.brokerId, peer.reachable, peer.lastSeenAgoMs])).toEqual([
      ['b', false, undefined],
      ['c', false, undefined],
    ]);
  });

  it('marks a peer reachable when it answers and unreachable once silent past the bound; one probe per peer at a time', async () => {
    const { health, pending, settle, advance } = tracker();
    health.viewRead(VIEW);
    health.probeAll();
    await settle('ws://b:7720', true);
    advance(300);
    // c's probe still out: not sent twice.
    health.probeAll();
    expect([...pending.keys()].sort()).toEqual(['ws://b:7720', 'ws://c:7720']);
    await settle('ws://c:7720', false);
    expect(health.self().peers).toEqual([
      { brokerId: 'b', url: 'ws://b:7720', reachable: true, lastSeenAgoMs: 300 },
      { brokerId: 'c', url: 'ws://c:7720', reachable: false, lastSeenAgoMs: undefined },
    ]);
    advance(800);
    expect(health.self().peers[0]).toMatchObject({ brokerId: 'b', reachable: false, lastSeenAgoMs: 1_100 });
  });

  it('says the database unreachable, with why, once no read got through for longer than the bound', () => {
    const { health, advance } = tracker();
    health.viewRead(VIEW);
    health.readFailed(new Error('connection timed out'));
    // Within the bound: still reachable, no error shown.
    expect(health.self().database).toEqual({ reachable: true, lastContactAgoMs: 0, lastError: undefined });
    advance(1_500);
    expect(health.self().database).toEqual({
      reachable: false,
      lastContactAgoMs: 1_500,
      lastError: 'connection timed out',
    });
  });

  it('forgets a peer gone from the live brokers', async () => {
    const { health } = tracker();
    health.viewRead(VIEW);
    health.viewRead({ ...VIEW, brokers: VIEW.brokers.filter((b) => b.brokerId !== 'c') });
    expect(health.self().peers.map((peer) => peer.brokerId)).toEqual(['b']);
  });
});

describe('GET /v1/cluster with a health tracker', () => {
  it('answers with the last view read and the database unreachable when the database does not answer in time', async () => {
    const { health } = tracker();
    let read: () => Promise<ClusterView> = () => Promise.resolve(VIEW);
    const app = Fastify();
    registerClusterRoutes(app, { readView: () => read(), health, readBudgetMs: 50 });
    const first = await app.inject({ method: 'GET', url: '/v1/cluster' });
    expect(first.json()).toMatchObject({ brokers: VIEW.brokers.map((b) => ({ brokerId: b.brokerId })) });
    expect(first.json().self.database.reachable).toBe(true);
    // The database cut off: a read that never settles.
    read = () => new Promise<ClusterView>(() => {});
    const tracked = tracker();
    tracked.health.viewRead(VIEW);
    tracked.advance(2_000);
    const cutApp = Fastify();
    registerClusterRoutes(cutApp, { readView: () => read(), health: tracked.health, readBudgetMs: 50 });
    const answer = await cutApp.inject({ method: 'GET', url: '/v1/cluster' });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({
      brokers: VIEW.brokers.map((b) => ({ brokerId: b.brokerId })),
      self: {
        brokerId: 'a',
        database: {
          reachable: false,
          lastContactAgoMs: 2_000,
          lastError: 'the database did not answer within 50 ms',
        },
      },
    });
    await Promise.all([app.close(), cutApp.close()]);
  });
});
