import type { DeliveredMessage, NackFrame } from '@ricochet/protocol';
import { deliveredMessage } from './delivered-message.js';
import type { FakeBroker } from './fake-broker.js';

/**
 * Waits on what a client sent a {@link FakeBroker}, for tests of clients that batch: they do not
 * know how many frames a number of results takes, so these wait for a number of items instead.
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
