import fc from 'fast-check';
import type { RetryPolicy } from '../retry-policy.js';
import type { BroadcastEvent } from './broadcast-lifecycle.js';
import type { PushEvent } from './push-lifecycle.js';
import type { SimpleEvent } from './simple-lifecycle.js';

/**
 * Events are generated with small times and lease numbers so that random sequences hit the
 * interesting cases (matching leases, due timers) often, not just rejections.
 */
const atMs = fc.integer({ min: 0, max: 2_000 });
const lease = fc.integer({ min: 0, max: 6 });

export const pushEvent: fc.Arbitrary<PushEvent> = fc.oneof(
  fc.record({
    type: fc.constant('delivered' as const),
    atMs,
    leaseDurationMs: fc.integer({ min: 0, max: 500 }),
  }),
  fc.record({ type: fc.constant('succeeded' as const), atMs, lease }),
  fc.record(
    {
      type: fc.constant('failed' as const),
      atMs,
      lease,
      reason: fc.constantFrom('FAILURE', 'threw'),
      retryAfterMs: fc.integer({ min: -5, max: 500 }),
    },
    { requiredKeys: ['type', 'atMs', 'lease', 'reason'] },
  ),
  fc.record({
    type: fc.constant('deadLettered' as const),
    atMs,
    lease,
    reason: fc.constantFrom('', 'poison'),
  }),
  fc.record({ type: fc.constant('timedOut' as const), atMs, lease }),
  fc.record({ type: fc.constant('released' as const), atMs, lease }),
  // X4: mostly short postponements; past an hour, the default maxPostponeMs, one becomes a failure.
  fc.record({
    type: fc.constant('postponed' as const),
    atMs,
    lease,
    postponeMs: fc.oneof(fc.integer({ min: -5, max: 500 }), fc.constant(3_700_000)),
  }),
  fc.record({ type: fc.constant('retryDue' as const), atMs: fc.integer({ min: 0, max: 20_000 }) }),
);

export const simpleEvent: fc.Arbitrary<SimpleEvent> = fc.oneof(
  fc.record({
    type: fc.constant('delivered' as const),
    atMs,
    invisibleDurationMs: fc.integer({ min: 0, max: 500 }),
  }),
  fc.record({ type: fc.constant('succeeded' as const), atMs, lease }),
  fc.record({
    type: fc.constant('invisibilityChanged' as const),
    atMs,
    lease,
    invisibleDurationMs: fc.integer({ min: -1, max: 500 }),
  }),
  fc.record({
    type: fc.constant('deadLettered' as const),
    atMs,
    lease,
    reason: fc.constantFrom('', 'poison'),
  }),
  fc.record({ type: fc.constant('leaseExpired' as const), atMs, lease }),
  fc.record({ type: fc.constant('released' as const), atMs, lease }),
);

export const policy: fc.Arbitrary<RetryPolicy> = fc.oneof(
  fc.record({ type: fc.constant('fixed' as const), delayMs: fc.integer({ min: 0, max: 1_000 }) }),
  fc.record({
    type: fc.constant('stepped' as const),
    delaysMs: fc.array(fc.integer({ min: 0, max: 1_000 }), { minLength: 1, maxLength: 5 }),
  }),
);

export const maxRetries = fc.integer({ min: 0, max: 5 });

export const broadcastEvent: fc.Arbitrary<BroadcastEvent> = fc.oneof(
  fc.record({
    type: fc.constant('delivered' as const),
    atMs,
    leaseDurationMs: fc.integer({ min: 0, max: 500 }),
  }),
  fc.record({ type: fc.constant('succeeded' as const), atMs, lease }),
  fc.record({
    type: fc.constant('failed' as const),
    atMs,
    lease,
    reason: fc.constantFrom('FAILURE', 'threw'),
  }),
  fc.record({ type: fc.constant('timedOut' as const), atMs, lease }),
  fc.record({ type: fc.constant('released' as const), atMs, lease }),
);
