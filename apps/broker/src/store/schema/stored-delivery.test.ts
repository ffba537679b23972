import { DEAD_LETTER_CAUSES, type PushState, type SimpleState } from '@ricochet/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../records.js';
import {
  fromStoredDelivery,
  MAPPED_DELIVERY_FIELDS,
  type StoredDeliveryV1,
  toStoredDelivery,
} from './stored-delivery.js';
import {
  MAPPED_STATE_FIELDS,
  type StoredPushStateV1,
  type StoredSimpleStateV1,
} from './stored-delivery-state.js';

const count = fc.nat({ max: 1_000 });
const timeMs = fc.nat({ max: 2 ** 45 });
const text = fc.string({ maxLength: 12 });

/**
 * The counters, in the order core writes them; the failure reason and the times of the first
 * delivery, failure and postponement (X2, X6, X4) may be absent, as in records stored before them.
 */
const counters = {
  failures: count,
  releases: count,
  lease: count,
  lastFailureReason: text,
  firstDeliveredAtMs: timeMs,
  firstFailedAtMs: timeMs,
  firstPostponedAtMs: timeMs,
};
const COUNTERS_REQUIRED = ['failures', 'releases', 'lease'] as const;
// Plain prototypes: the mappers build plain objects, and toStrictEqual compares prototypes.
const PLAIN = { noNullPrototype: true } as const;

const ready = fc.record(
  { state: fc.constant('ready' as const), ...counters },
  { requiredKeys: ['state', ...COUNTERS_REQUIRED], ...PLAIN },
);
const inflight = fc.record(
  { state: fc.constant('inflight' as const), leaseDeadlineMs: timeMs, deliveryAttempt: count, ...counters },
  { requiredKeys: ['state', 'leaseDeadlineMs', 'deliveryAttempt', ...COUNTERS_REQUIRED], ...PLAIN },
);
const waitingRetry = fc.record(
  {
    state: fc.constant('waitingRetry' as const),
    retryNumber: count,
    retryDelayMs: timeMs,
    retryAtMs: timeMs,
    ...counters,
  },
  { requiredKeys: ['state', 'retryNumber', 'retryDelayMs', 'retryAtMs', ...COUNTERS_REQUIRED], ...PLAIN },
);
const commit = fc.record(
  { state: fc.constant('commit' as const), ...counters },
  { requiredKeys: ['state', ...COUNTERS_REQUIRED], ...PLAIN },
);
const dlq = fc.record(
  {
    state: fc.constant('dlq' as const),
    reason: text,
    // X6: absent from records stored before causes were recorded.
    cause: fc.constantFrom(...DEAD_LETTER_CAUSES),
    ...counters,
  },
  { requiredKeys: ['state', 'reason', ...COUNTERS_REQUIRED], ...PLAIN },
);
// Typed as core's states, so that a change to their shape fails to compile here too.
const simpleState: fc.Arbitrary<SimpleState> = fc.oneof(ready, inflight, commit, dlq);
const pushState: fc.Arbitrary<PushState> = fc.oneof(ready, inflight, waitingRetry, commit, dlq);

/** Records with every optional fact present or not, in the order the broker writes them. */
function record<TConsumer extends 'push' | 'simple', TState>(
  consumer: TConsumer,
  state: fc.Arbitrary<TState>,
) {
  return fc.record(
    {
      consumer: fc.constant(consumer),
      state,
      messageId: text,
      scheduleKey: fc.tuple(text, timeMs, text, count),
      consumerId: text,
      deliveredAt: timeMs,
    },
    { requiredKeys: ['consumer', 'state', 'messageId'], ...PLAIN },
  );
}
const deliveryRecord: fc.Arbitrary<DeliveryRecord> = fc.oneof(
  record('push', pushState),
  record('simple', simpleState),
);
// Layout 1's states have core's fields today, in the same order: the same generators make both.
const storedDelivery: fc.Arbitrary<StoredDeliveryV1> = fc.oneof(
  record('push', fc.oneof<fc.Arbitrary<StoredPushStateV1>[]>(ready, inflight, waitingRetry, commit, dlq)),
  record('simple', fc.oneof<fc.Arbitrary<StoredSimpleStateV1>[]>(ready, inflight, commit, dlq)),
);

describe('stored delivery records (layout 1)', () => {
  it('map engine → stored → engine to the same record (property)', () => {
    fc.assert(
      fc.property(deliveryRecord, (engine) => {
        expect(fromStoredDelivery(toStoredDelivery(engine))).toStrictEqual(engine);
      }),
    );
  });

  it('map stored → engine → stored to the same fields in the same order, so a rewrite keeps the bytes (property)', () => {
    fc.assert(
      fc.property(storedDelivery, (stored) => {
        const again = toStoredDelivery(fromStoredDelivery(stored));
        expect(again).toStrictEqual(stored);
        expect(JSON.stringify(again)).toBe(JSON.stringify(stored));
      }),
    );
  });

  it('write only the fields the mapper declares, and no undefined ones (property)', () => {
    fc.assert(
      fc.property(deliveryRecord, (engine) => {
        const stored = toStoredDelivery(engine);
        expect(Object.keys(stored).filter((field) => !(field in MAPPED_DELIVERY_FIELDS))).toEqual([]);
        const stateFields: Record<string, object> = MAPPED_STATE_FIELDS[stored.consumer];
        const mapped = stateFields[stored.state.state] ?? {};
        expect(Object.keys(stored.state).filter((field) => !(field in mapped))).toEqual([]);
        expect(Object.values(stored)).not.toContain(undefined);
        expect(Object.values(stored.state)).not.toContain(undefined);
      }),
    );
  });

  it('copy states out of the engine: a later change to the engine object leaves the stored one alone', () => {
    const state = { state: 'ready', failures: 0, releases: 0, lease: 1 } as const;
    const stored = toStoredDelivery({ consumer: 'simple', state, messageId: 'm' });
    expect(stored.state).not.toBe(state);
  });
});
