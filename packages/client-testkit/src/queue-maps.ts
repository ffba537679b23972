import type { QueueMapFrame } from '@ricochet/protocol';
import type { FakeBroker } from './fake-broker.js';

/**
 * The `queueMap` a client's tests tell it most: two queues, queue 0 owned by `home` (the broker
 * the client connected to) and queue 1 by `owner`, each at its fake broker's endpoint; `fields`
 * change any of it (another owner list, a missing endpoint).
 */
export function twoOwnerQueueMap(
  home: FakeBroker,
  owner: FakeBroker,
  fields: Partial<QueueMapFrame> = {},
): QueueMapFrame {
  return {
    type: 'queueMap',
    placement: 'fnv1a-group-or-id',
    queues: 2,
    broker: 'home',
    owners: ['home', 'owner'],
    endpoints: { home: home.endpoint, owner: owner.endpoint },
    ...fields,
  };
}
