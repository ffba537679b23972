import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  admitDelivery,
  BREAKER_STATES,
  DEFAULT_PAUSE_ON_FAILURES,
  FAILURE_WINDOW_BUCKETS,
  type GroupPauseEvent,
  type GroupPauseState,
  groupPauseTransition,
  initialGroupPauseState,
  type PauseOnFailuresConfig,
  restoreGroupPauseState,
  type StormOutcome,
  storedGroupPause,
  validatePauseOnFailures,
  windowCounts,
} from './failure-storm.js';

const runs = { numRuns: 1_000 };

const config: fc.Arbitrary<PauseOnFailuresConfig> = fc
  .record({
    failureRatio: fc.double({ min: 0.05, max: 1, noNaN: true }),
    minOutcomes: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.integer({ min: 10, max: 10_000 }),
    pauseMs: fc.integer({ min: 1, max: 1_000 }),
    maxPauseMs: fc.integer({ min: 1, max: 10_000 }),
  })
  .map((each) => ({ ...each, maxPauseMs: Math.max(each.maxPauseMs, each.pauseMs) }));

const outcome: fc.Arbitrary<StormOutcome> = fc.constantFrom(
  'success',
  'failure',
  'failure',
  'release',
  'deadConsumerTimeout',
  'deadLetterNow',
);

/** Events with time steps; probes and outcomes name a few deliveries, so a probe's own outcome comes up. */
const step = fc.record({
  advanceMs: fc.integer({ min: 0, max: 2_000 }),
  kind: fc.constantFrom(
    'outcome',
    'outcome',
    'outcome',
    'probeSent',
    'pause',
    'resume',
    'ruleChanged',
    'elsewhereCounted',
  ),
  outcome,
  deliveryId: fc.constantFrom('a', 'b', 'c', 'd'),
  /** What the group's other queues report, for `elsewhereCounted`. */
  elsewhere: fc.record({ successes: fc.nat(30), failures: fc.nat(30) }),
});

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

function run(
  steps: readonly Step[],
  cfg: PauseOnFailuresConfig,
  check: (before: GroupPauseState, event: GroupPauseEvent, after: GroupPauseState) => void,
): void {
  let state = initialGroupPauseState();
  let atMs = 0;
  for (const each of steps) {
    atMs += each.advanceMs;
    const event: GroupPauseEvent =
      each.kind === 'outcome'
        ? { type: 'outcome', outcome: each.outcome, deliveryId: each.deliveryId, atMs }
        : each.kind === 'probeSent'
          ? { type: 'probeSent', deliveryId: each.deliveryId, atMs }
          : each.kind === 'elsewhereCounted'
            ? { type: 'elsewhereCounted', counts: each.elsewhere, atMs }
            : { type: each.kind as 'pause' | 'resume' | 'ruleChanged', atMs };
    const next = groupPauseTransition(state, event, cfg);
    for (const effect of next.effects) {
      if (effect.type === 'breakerTransitioned') {
        expect(effect.from).toBe(state.breaker.state);
        expect(effect.to).toBe(next.state.breaker.state);
      }
    }
    if (next.state.breaker.state !== state.breaker.state) {
      expect(next.effects.some((effect) => effect.type === 'breakerTransitioned')).toBe(true);
    }
    check(state, event, next.state);
    state = next.state;
  }
}

const LEGAL = new Set(['closed>open', 'open>halfOpen', 'halfOpen>closed', 'halfOpen>open', 'open>closed']);

describe('failure-storm rule properties', () => {
  it('reaches no illegal state and makes only legal moves', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), config, (steps, cfg) => {
        run(steps, cfg, (before, event, after) => {
          expect(BREAKER_STATES).toContain(after.breaker.state);
          if (before.breaker.state !== after.breaker.state) {
            expect(LEGAL.has(`${before.breaker.state}>${after.breaker.state}`)).toBe(true);
            // Only a resume closes an open breaker without a probe.
            if (before.breaker.state === 'open' && after.breaker.state === 'closed')
              expect(event.type).toBe('resume');
          }
          if (after.breaker.state !== 'closed') {
            expect(after.breaker.pauseMs).toBeGreaterThanOrEqual(Math.min(cfg.pauseMs, cfg.maxPauseMs));
            expect(after.breaker.pauseMs).toBeLessThanOrEqual(cfg.maxPauseMs);
          }
          if (after.breaker.state === 'open')
            expect(after.breaker.nextProbeAtMs).toBeLessThanOrEqual(event.atMs + cfg.maxPauseMs);
          expect(after.window.length).toBeLessThanOrEqual(FAILURE_WINDOW_BUCKETS + 1);
          // A manual pause holds regardless of the breaker.
          if (after.manuallyPaused)
            expect(admitDelivery(after, event.atMs)).toMatchObject({ type: 'hold', reason: 'manual' });
          // Releases, dead-consumer timeouts and dead-letter-now never trip the breaker.
          if (
            event.type === 'outcome' &&
            event.outcome !== 'failure' &&
            event.outcome !== 'success' &&
            before.breaker.state === 'closed'
          ) {
            expect(after.breaker.state).toBe('closed');
          }
        });
      }),
      runs,
    );
  });

  it('lets one probe out at a time: half-open holds every other delivery', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), config, (steps, cfg) => {
        run(steps, cfg, (_before, event, after) => {
          const admission = admitDelivery(after, event.atMs);
          if (after.breaker.state === 'halfOpen') expect(admission.type).toBe('hold');
          if (after.breaker.state === 'open') expect(admission.type).not.toBe('deliver');
          if (after.breaker.state === 'closed' && !after.manuallyPaused)
            expect(admission.type).toBe('deliver');
        });
      }),
      runs,
    );
  });

  it('with the rule off, never leaves closed', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        let state = initialGroupPauseState();
        let atMs = 0;
        for (const each of steps) {
          atMs += each.advanceMs;
          state = groupPauseTransition(
            state,
            { type: 'outcome', outcome: each.outcome, deliveryId: 'x', atMs },
            undefined,
          ).state;
          const elsewhere = { type: 'elsewhereCounted', counts: each.elsewhere, atMs } as const;
          state = groupPauseTransition(state, elsewhere, undefined).state;
          expect(state.breaker.state).toBe('closed');
          expect(state.window).toEqual([]);
        }
      }),
      runs,
    );
  });

  it('never trips on a single poison message among successes (defaults, maxRetries 16)', () => {
    const maxRetries = 16;
    fc.assert(
      fc.property(
        fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 5_000 }), poison: fc.boolean() }), {
          maxLength: 300,
        }),
        (steps) => {
          let state = initialGroupPauseState();
          let atMs = 0;
          let poisonFailures = 0;
          for (const [index, each] of steps.entries()) {
            atMs += each.advanceMs;
            const poison = each.poison && poisonFailures < maxRetries + 1;
            if (poison) poisonFailures += 1;
            state = groupPauseTransition(
              state,
              { type: 'outcome', outcome: poison ? 'failure' : 'success', deliveryId: `d${index}`, atMs },
              DEFAULT_PAUSE_ON_FAILURES,
            ).state;
            expect(state.breaker.state).toBe('closed');
          }
        },
      ),
      runs,
    );
  });

  it('honours time: outcomes older than windowMs never count, those younger than windowMs minus a bucket always do', () => {
    fc.assert(
      fc.property(
        config,
        fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 3_000 }), failed: fc.boolean() }), {
          maxLength: 80,
        }),
        (cfg, steps) => {
          const open = { ...cfg, minOutcomes: Number.MAX_SAFE_INTEGER };
          let state = initialGroupPauseState();
          let atMs = 0;
          const seen: { atMs: number; failed: boolean }[] = [];
          for (const [index, each] of steps.entries()) {
            atMs += each.advanceMs;
            seen.push({ atMs, failed: each.failed });
            state = groupPauseTransition(
              state,
              {
                type: 'outcome',
                outcome: each.failed ? 'failure' : 'success',
                deliveryId: `d${index}`,
                atMs,
              },
              open,
            ).state;
            const counts = windowCounts(state, open, atMs);
            const bucketMs = cfg.windowMs / FAILURE_WINDOW_BUCKETS;
            const surely = seen.filter((o) => atMs - o.atMs < cfg.windowMs - bucketMs);
            const possibly = seen.filter((o) => atMs - o.atMs <= cfg.windowMs);
            const failures = (list: typeof seen) => list.filter((o) => o.failed).length;
            expect(counts.failures).toBeGreaterThanOrEqual(failures(surely));
            expect(counts.failures).toBeLessThanOrEqual(failures(possibly));
            expect(counts.successes + counts.failures).toBeGreaterThanOrEqual(surely.length);
            expect(counts.successes + counts.failures).toBeLessThanOrEqual(possibly.length);
          }
        },
      ),
      runs,
    );
  });

  it('restores a stored state: open stays open, half-open probes again at once', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 80 }),
        config,
        fc.integer({ min: 0, max: 1e9 }),
        (steps, cfg, restartAtMs) => {
          run(steps, cfg, (_before, _event, after) => {
            const restored = restoreGroupPauseState(storedGroupPause(after), restartAtMs);
            expect(restored.manuallyPaused).toBe(after.manuallyPaused);
            if (after.breaker.state === 'halfOpen') {
              expect(restored.breaker).toEqual({
                state: 'open',
                pauseMs: after.breaker.pauseMs,
                nextProbeAtMs: restartAtMs,
              });
            } else {
              expect(restored.breaker).toEqual(after.breaker);
            }
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('failure-storm rule', () => {
  const cfg: PauseOnFailuresConfig = {
    failureRatio: 0.5,
    minOutcomes: 4,
    windowMs: 1_000,
    pauseMs: 100,
    maxPauseMs: 300,
  };
  const fail = (atMs: number, deliveryId = `f${atMs}`): GroupPauseEvent => ({
    type: 'outcome',
    outcome: 'failure',
    deliveryId,
    atMs,
  });

  it('opens, probes, doubles the wait up to maxPauseMs, and closes on a probe success', () => {
    let state = initialGroupPauseState();
    for (const atMs of [0, 1, 2, 3]) state = groupPauseTransition(state, fail(atMs), cfg).state;
    expect(state.breaker).toEqual({ state: 'open', pauseMs: 100, nextProbeAtMs: 103 });
    expect(admitDelivery(state, 50)).toEqual({ type: 'hold', reason: 'failures', untilMs: 103 });
    expect(admitDelivery(state, 103)).toEqual({ type: 'probe' });
    state = groupPauseTransition(state, { type: 'probeSent', deliveryId: 'p1', atMs: 103 }, cfg).state;
    expect(state.breaker.state).toBe('halfOpen');
    // A straggler's failure does not decide: only the probe's outcome does.
    state = groupPauseTransition(state, fail(104, 'other'), cfg).state;
    expect(state.breaker.state).toBe('halfOpen');
    state = groupPauseTransition(state, fail(110, 'p1'), cfg).state;
    expect(state.breaker).toEqual({ state: 'open', pauseMs: 200, nextProbeAtMs: 310 });
    state = groupPauseTransition(state, { type: 'probeSent', deliveryId: 'p2', atMs: 310 }, cfg).state;
    state = groupPauseTransition(state, fail(320, 'p2'), cfg).state;
    expect(state.breaker).toEqual({ state: 'open', pauseMs: 300, nextProbeAtMs: 620 });
    state = groupPauseTransition(state, { type: 'probeSent', deliveryId: 'p3', atMs: 620 }, cfg).state;
    const closed = groupPauseTransition(
      state,
      { type: 'outcome', outcome: 'success', deliveryId: 'p3', atMs: 630 },
      cfg,
    );
    expect(closed.state.breaker).toEqual({ state: 'closed' });
    expect(closed.effects).toEqual([{ type: 'breakerTransitioned', from: 'halfOpen', to: 'closed' }]);
  });

  const success = (atMs: number): GroupPauseEvent => ({
    type: 'outcome',
    outcome: 'success',
    deliveryId: 's',
    atMs,
  });

  it('trips on the whole group: its other queues’ outcomes count, until a probe success closes it', () => {
    // 2 failures here, 2 elsewhere: 4 outcomes, all failed, trips where 2 alone would not.
    let state = groupPauseTransition(initialGroupPauseState(), fail(0), cfg).state;
    state = groupPauseTransition(state, fail(1), cfg).state;
    expect(state.breaker.state).toBe('closed');
    const counts = { successes: 0, failures: 2 };
    const tripped = groupPauseTransition(state, { type: 'elsewhereCounted', counts, atMs: 2 }, cfg);
    expect(tripped.state.breaker).toEqual({ state: 'open', pauseMs: 100, nextProbeAtMs: 102 });
    // Elsewhere first, then a local failure trips it as well.
    state = groupPauseTransition(
      initialGroupPauseState(),
      { type: 'elsewhereCounted', counts, atMs: 0 },
      cfg,
    ).state;
    expect(state.breaker.state).toBe('closed');
    state = groupPauseTransition(state, fail(1), cfg).state;
    expect(state.breaker.state).toBe('closed');
    state = groupPauseTransition(state, fail(2), cfg).state;
    expect(state.breaker.state).toBe('open');
    // A queue that delivers fine is not paused by the others' storm.
    const healthy = groupPauseTransition(initialGroupPauseState(), success(0), cfg).state;
    const stormElsewhere = { successes: 0, failures: 50 };
    expect(
      groupPauseTransition(healthy, { type: 'elsewhereCounted', counts: stormElsewhere, atMs: 1 }, cfg).state
        .breaker.state,
    ).toBe('closed');
    // A probe success forgets what the other queues said: their storm cannot reopen it at once.
    state = groupPauseTransition(state, { type: 'probeSent', deliveryId: 'p', atMs: 102 }, cfg).state;
    state = groupPauseTransition(
      state,
      { type: 'outcome', outcome: 'success', deliveryId: 'p', atMs: 103 },
      cfg,
    ).state;
    expect(state).toEqual({ breaker: { state: 'closed' }, window: [], manuallyPaused: false });
    state = groupPauseTransition(state, success(104), cfg).state;
    state = groupPauseTransition(
      state,
      { type: 'elsewhereCounted', counts: stormElsewhere, atMs: 105 },
      cfg,
    ).state;
    expect(state.breaker.state).toBe('closed');
  });

  it('does not count releases, dead-consumer timeouts or dead-letter-now', () => {
    let state = initialGroupPauseState();
    for (const [index, outcome] of (['release', 'deadConsumerTimeout', 'deadLetterNow'] as const).entries()) {
      for (let i = 0; i < 10; i += 1) {
        state = groupPauseTransition(
          state,
          { type: 'outcome', outcome, deliveryId: `${index}-${i}`, atMs: i },
          cfg,
        ).state;
      }
    }
    expect(state).toEqual(initialGroupPauseState());
  });

  it('holds everything while paused by hand, and resume closes the breaker', () => {
    let state = groupPauseTransition(initialGroupPauseState(), { type: 'pause', atMs: 0 }, undefined).state;
    expect(admitDelivery(state, 0)).toEqual({ type: 'hold', reason: 'manual' });
    for (const atMs of [0, 1, 2, 3]) state = groupPauseTransition(state, fail(atMs), cfg).state;
    expect(state.breaker.state).toBe('open');
    const resumed = groupPauseTransition(state, { type: 'resume', atMs: 5 }, cfg);
    expect(resumed.state).toEqual(initialGroupPauseState());
    expect(admitDelivery(resumed.state, 5)).toEqual({ type: 'deliver' });
  });

  it('closes the breaker when the rule is turned off, and keeps it when the rule stays on', () => {
    let state = initialGroupPauseState();
    for (const atMs of [0, 1, 2, 3]) state = groupPauseTransition(state, fail(atMs), cfg).state;
    expect(groupPauseTransition(state, { type: 'ruleChanged', atMs: 4 }, cfg).state).toBe(state);
    const off = groupPauseTransition(state, { type: 'ruleChanged', atMs: 4 }, undefined);
    expect(off.state.breaker).toEqual({ state: 'closed' });
    expect(off.effects).toEqual([{ type: 'breakerTransitioned', from: 'open', to: 'closed' }]);
  });

  it('validates a config', () => {
    expect(validatePauseOnFailures(DEFAULT_PAUSE_ON_FAILURES)).toEqual([]);
    expect(validatePauseOnFailures({ ...cfg, failureRatio: 0, pauseMs: 500 })).toEqual([
      'failureRatio must be in (0, 1]',
      'maxPauseMs must be >= pauseMs',
    ]);
  });
});
