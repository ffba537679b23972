import type { DeliveredMessage, NackFrame } from '@ricochet/protocol';
import { deliveredMessage } from './delivered-message.js';
import type { FakeBroker } from './fake-broker.js';

/**
 * Traffic for tests against a {@link FakeBroker}: numbered messages made ready for push or
 * receive, and waits on what a client sent. The waits count items, not frames: a client that
 * batches decides itself how many frames a number of results takes.
 */

/** Ready `count` messages `m0`, `m1`, … for push; the fake leases them as `lease-1`, `lease-2`, … */
export function pushNumberedMessages(
  fake: FakeBroker,
  count: number,
  fields: (index: number) => Partial<DeliveredMessage> = () => ({}),
): void {
  const messages = Array.from({ length: count }, (_, index) =>
    deliveredMessage({ messageId: `m${index}`, offset: index, ...fields(index) }),
  );
  fake.push(...messages);
}

/** Every receipt handle of `type` frames, once at least `count` have arrived. */
export async function receiptHandlesSent(
  fake: FakeBroker,
  type: 'ack' | 'release',
  count: number,
): Promise<string[]> {
  // Each frame carries at least one handle, so `count` frames are always enough.
  for (let frames = 1; frames <= count; frames++) {
    const handles = (await fake.waitForFrames(type, frames)).flatMap((frame) => frame.receiptHandles);
    if (handles.length >= count) return handles;
  }
  throw new Error('unreachable');
}

/** Every item of `nack` frames, once at least `count` have arrived. */
export async function nackItemsSent(fake: FakeBroker, count: number): Promise<NackFrame['items'][number][]> {
  for (let frames = 1; frames <= count; frames++) {
    const items = (await fake.waitForFrames('nack', frames)).flatMap((frame) => frame.items);
    if (items.length >= count) return items;
  }
  throw new Error('unreachable');
}

/** The credits of all `credit` frames, once they add up to at least `total`. */
export async function creditsGranted(fake: FakeBroker, total: number): Promise<number> {
  for (let frames = 1; frames <= total; frames++) {
    const credits = (await fake.waitForFrames('credit', frames)).reduce(
      (sum, frame) => sum + frame.credits,
      0,
    );
    if (credits >= total) return credits;
  }
  throw new Error('unreachable');
}

/**
 * Ready `count` messages for the default `receive` handler, with ids ending in their index, tag
 * `paid`, first delivery; it leases them as `lease-1`, `lease-2`, … as they are received.
 */
export function readyNumberedMessages(fake: FakeBroker, count: number): void {
  for (let index = 0; index < count; index++) {
    fake.ready.push(
      deliveredMessage({
        messageId: `0193a1f4c2d87b3e9f6a5c4b3e2d1f0${index}`,
        offset: index,
        tag: 'paid',
        deliveryAttempt: 1,
      }),
    );
  }
}
