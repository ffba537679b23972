import {
  DEFAULT_BROADCAST_INSTANCE_TTL_MS,
  DEFAULT_DLQ_RETENTION_MS,
  type GroupConfig,
  type RetryPolicy,
  type StoredGroupPause,
} from '@ricochet/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GroupRecord } from '../records.js';
import { fromStoredGroup, type StoredGroupV1, toStoredGroup } from './stored-group.js';

const PLAIN = { noNullPrototype: true } as const;
const positive = fc.integer({ min: 1, max: 2 ** 40 });

// Typed as core's policy, so that a change to its shape fails to compile here too.
const retryPolicy: fc.Arbitrary<RetryPolicy> = fc.oneof(
  // A jitter (X3) half the time: absent, as in every policy stored before it existed.
  fc.record(
    {
      type: fc.constant('stepped' as const),
      delaysMs: fc.array(positive, { maxLength: 20 }),
      jitter: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
    },
    { ...PLAIN, requiredKeys: ['type', 'delaysMs'] },
  ),
  fc.record(
    {
      type: fc.constant('fixed' as const),
      delayMs: positive,
      jitter: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
    },
    { ...PLAIN, requiredKeys: ['type', 'delayMs'] },
  ),
  fc.record(
    {
      type: fc.constant('exponential' as const),
      initialMs: positive,
      multiplier: fc.double({ min: 1, max: 100, noNaN: true }),
      maxMs: positive,
      jitter: fc.double({ min: 0, max: 0.99, noNaN: true }),
    },
    PLAIN,
  ),
);

/** Fields in the order core's `resolveGroupConfig` writes them, which is layout 1's. */
const config: fc.Arbitrary<GroupConfig> = fc.record(
  {
    maxRetries: fc.nat({ max: 1_000 }),
    retryPolicy,
    fifo: fc.boolean(),
    consumeMode: fc.constantFrom('clustering' as const, 'broadcasting' as const),
    consumptionTimeoutMs: positive,
    startFrom: fc.constantFrom('latest' as const, 'earliest' as const),
    broadcastInstanceTtlMs: positive,
    // The default half the time: a group with the default DLQ retention stores none (stored-group.ts).
    dlqRetentionMs: fc.oneof(fc.constant(DEFAULT_DLQ_RETENTION_MS), positive),
    // X2 and X4: absent half the time, as in every group stored before them.
    maxRetryDurationMs: positive,
    maxPostponeMs: positive,
    // Absent (off) half the time, as in every group stored before failure storms existed.
    pauseOnFailures: fc.record(
      {
        failureRatio: fc.double({ min: 0.01, max: 1, noNaN: true }),
        minOutcomes: positive,
        windowMs: positive,
        pauseMs: positive,
        maxPauseMs: positive,
      },
      PLAIN,
    ),
  },
  {
    ...PLAIN,
    requiredKeys: [
      'maxRetries',
      'retryPolicy',
      'fifo',
      'consumeMode',
      'consumptionTimeoutMs',
      'startFrom',
      'broadcastInstanceTtlMs',
      'dlqRetentionMs',
    ],
  },
);

/** A pause worth storing: a breaker not closed, or a manual pause (a closed, unpaused group stores none). */
const pause: fc.Arbitrary<StoredGroupPause> = fc.oneof(
  fc.record({ breaker: fc.constant({ state: 'closed' as const }), manuallyPaused: fc.constant(true) }, PLAIN),
  fc.record(
    {
      breaker: fc.oneof(
        fc.record({ state: fc.constant('open' as const), pauseMs: positive, nextProbeAtMs: positive }, PLAIN),
        fc.record(
          {
            state: fc.constant('halfOpen' as const),
            pauseMs: positive,
            probeId: fc.string(),
            probeSentAtMs: positive,
          },
          PLAIN,
        ),
      ),
      manuallyPaused: fc.boolean(),
    },
    PLAIN,
  ),
);

const groupRecord: fc.Arbitrary<GroupRecord> = fc.record(
  { name: fc.string({ minLength: 1, maxLength: 12 }), config, createdAt: fc.nat(), pause },
  { ...PLAIN, requiredKeys: ['name', 'config', 'createdAt'] },
);

describe('stored group records (layout 1)', () => {
  it('map engine → stored → engine to the same record (property)', () => {
    fc.assert(
      fc.property(groupRecord, (engine) => {
        expect(fromStoredGroup(toStoredGroup(engine))).toStrictEqual(engine);
      }),
    );
  });

  it('map stored → engine → stored to the same fields in the same order (property)', () => {
    // Layout 1's group has core's fields today, in the same order: the same generator makes both,
    // except that the default DLQ retention is stored as an absent field.
    const stored: fc.Arbitrary<StoredGroupV1> = groupRecord.map((record) => {
      if (record.config.dlqRetentionMs !== DEFAULT_DLQ_RETENTION_MS) return record;
      const { dlqRetentionMs: _default, ...config } = record.config;
      return { ...record, config };
    });
    fc.assert(
      fc.property(stored, (record) => {
        const again = toStoredGroup(fromStoredGroup(record));
        expect(again).toStrictEqual(record);
        expect(JSON.stringify(again)).toBe(JSON.stringify(record));
      }),
    );
  });

  it('give a group stored before broadcasting groups existed the default instance TTL (B1)', () => {
    const stored: StoredGroupV1 = {
      name: 'billing',
      config: {
        maxRetries: 2,
        retryPolicy: { type: 'fixed', delayMs: 100 },
        fifo: false,
        consumeMode: 'clustering',
        consumptionTimeoutMs: 1_000,
        startFrom: 'latest',
      },
      createdAt: 1,
    };
    expect(fromStoredGroup(stored).config.broadcastInstanceTtlMs).toBe(DEFAULT_BROADCAST_INSTANCE_TTL_MS);
    expect(fromStoredGroup(stored).config.dlqRetentionMs).toBe(DEFAULT_DLQ_RETENTION_MS);
  });

  it('store a group with the default DLQ retention without the field, as before retention existed', () => {
    const engine = fromStoredGroup({
      name: 'billing',
      config: {
        maxRetries: 2,
        retryPolicy: { type: 'fixed', delayMs: 100 },
        fifo: false,
        consumeMode: 'clustering',
        consumptionTimeoutMs: 1_000,
        startFrom: 'latest',
        broadcastInstanceTtlMs: 5,
      },
      createdAt: 1,
    });
    expect('dlqRetentionMs' in toStoredGroup(engine).config).toBe(false);
    expect(
      toStoredGroup({ ...engine, config: { ...engine.config, dlqRetentionMs: 7 } }).config.dlqRetentionMs,
    ).toBe(7);
  });

  it('store a group that never paused without a pause, and one paused by hand with it (DESIGN.md §11)', () => {
    const engine = fromStoredGroup({
      name: 'billing',
      config: {
        maxRetries: 2,
        retryPolicy: { type: 'fixed', delayMs: 100 },
        fifo: false,
        consumeMode: 'clustering',
        consumptionTimeoutMs: 1_000,
        startFrom: 'latest',
      },
      createdAt: 1,
    });
    expect(engine.pause).toBeUndefined();
    expect(engine.config.pauseOnFailures).toBeUndefined();
    expect(
      'pause' in toStoredGroup({ ...engine, pause: { breaker: { state: 'closed' }, manuallyPaused: false } }),
    ).toBe(false);
    const paused = { ...engine, pause: { breaker: { state: 'closed' as const }, manuallyPaused: true } };
    expect(fromStoredGroup(toStoredGroup(paused))).toStrictEqual(paused);
  });
});
