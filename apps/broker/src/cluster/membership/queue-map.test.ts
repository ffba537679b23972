import { describe, expect, it } from 'vitest';
import type { LiveBroker } from './broker-registry.js';
import { QueueMaps } from './queue-map.js';
import type { QueueRoute } from './queue-ownership.js';

const live = (brokerId: string, advertiseUrl?: string, advertiseTcpUrl?: string): LiveBroker => ({
  brokerId,
  advertiseUrl,
  advertiseTcpUrl,
  storeQueues: 4,
  expiresInMs: 1_000,
});

function mapsOver(routes: QueueRoute[]) {
  const maps = new QueueMaps({ me: 'a', queues: routes.length, routes: () => routes });
  maps.brokersSeen([
    live('a', 'ws://10.0.0.1:7720', 'tcp://10.0.0.1:7721'),
    live('b', 'https://10.0.0.2:7720'),
    live('c', 'ws://10.0.0.3:7720'),
  ]);
  return maps;
}

describe('QueueMaps', () => {
  const routes: QueueRoute[] = [
    { queue: 0, assigned: true, to: 'here' },
    { queue: 1, assigned: false, to: 'elsewhere', url: 'ws://10.0.0.2:7720', owner: 'b' },
    { queue: 2, assigned: false, to: 'nowhere' },
    { queue: 3, assigned: false, to: 'elsewhere', url: 'ws://10.0.0.2:7720', owner: 'b' },
  ];

  it('names each queue’s owner as this broker routes it, and the owners’ endpoints on the transport', () => {
    expect(mapsOver(routes).feed('webSocket').current()).toEqual({
      type: 'queueMap',
      placement: 'fnv1a-group-or-id',
      queues: 4,
      broker: 'a',
      owners: ['a', 'b', null, 'b'],
      // An http(s) advertise URL is reached as ws(s); a broker that owns nothing is left out.
      endpoints: { a: 'ws://10.0.0.1:7720', b: 'wss://10.0.0.2:7720' },
    });
  });

  it('leaves out an owner without an endpoint on the transport: its queues are reached through the session', () => {
    expect(mapsOver(routes).feed('tcp').current()?.endpoints).toEqual({ a: 'tcp://10.0.0.1:7721' });
  });

  it('tells every watcher once per burst of changes, with the map after them', async () => {
    const current = [...routes];
    const maps = new QueueMaps({ me: 'a', queues: 4, routes: () => current });
    const feed = maps.feed('webSocket');
    const seen: (readonly (string | null)[] | undefined)[] = [];
    const stop = feed.onChange(() => seen.push(feed.current()?.owners));
    current[2] = { queue: 2, assigned: true, to: 'here' };
    maps.routeChanged();
    current[1] = { queue: 1, assigned: false, to: 'nowhere' };
    maps.routeChanged();
    await Promise.resolve();
    expect(seen).toEqual([['a', null, 'a', 'b']]);
    stop();
    maps.routeChanged();
    await Promise.resolve();
    expect(seen).toHaveLength(1);
  });

  it('tells of a change of endpoints, and not of a reading that changed nothing', async () => {
    const maps = new QueueMaps({ me: 'a', queues: 4, routes: () => routes });
    let changes = 0;
    maps.feed('webSocket').onChange(() => changes++);
    maps.brokersSeen([live('a', 'ws://10.0.0.1:7720'), live('b', 'ws://10.0.0.2:7720')]);
    await Promise.resolve();
    maps.brokersSeen([live('a', 'ws://10.0.0.1:7720'), live('b', 'ws://10.0.0.2:7720')]);
    await Promise.resolve();
    expect(changes).toBe(1);
    expect(maps.feed('webSocket').current()?.endpoints).toEqual({
      a: 'ws://10.0.0.1:7720',
      b: 'ws://10.0.0.2:7720',
    });
  });
});
