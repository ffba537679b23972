import { assertNever } from './assert-never.js';

/**
 * A group's failure-storm rule (DESIGN.md §11): when nearly every delivery in a sliding window
 * fails, the group stops delivering instead of spending every message's attempts, and sends one
 * probe at a time until the thing behind its consumers is back.
 *
 * The defaults never trip on a single poison message: one message gives at most `maxRetries + 1`
 * failures (17 with the default `maxRetries` of 16), while tripping needs at least
 * `ceil(failureRatio × minOutcomes)` failures in one window (18 with these defaults). A poison
 * message among successes lowers the ratio further; only many messages failing together trip it.
 */
export interface PauseOnFailuresConfig {
  /**
   * The share of failures among the window's outcomes at or above which the breaker opens, in
   * (0, 1]. @default 0.9
   */
  readonly failureRatio: number;
  /**
   * The fewest counted outcomes in the window before the ratio is looked at, so that a quiet
   * group (or a single message retried alone) cannot trip it. @default 20
   */
  readonly minOutcomes: number;
  /** How far back the window looks, in milliseconds. @default 60000 (1 min) */
  readonly windowMs: number;
  /** The wait before the first probe of an open breaker, in milliseconds. @default 5000 (5 s) */
  readonly pauseMs: number;
  /**
   * The longest wait between probes: each failed probe doubles the wait up to this, in
   * milliseconds. @default 300000 (5 min)
   */
  readonly maxPauseMs: number;
}

/** The defaults of {@link PauseOnFailuresConfig}; see there for why they spare a poison message. */
export const DEFAULT_PAUSE_ON_FAILURES: PauseOnFailuresConfig = Object.freeze({
  failureRatio: 0.9,
  minOutcomes: 20,
  windowMs: 60_000,
  pauseMs: 5_000,
  maxPauseMs: 300_000,
});

/** How many buckets the sliding window is cut into: it forgets an outcome within `windowMs / 10` of its age limit. */
export const FAILURE_WINDOW_BUCKETS = 10;

/**
 * How a delivery ended, as the failure-storm rule sees it. Only `success` and `failure` count:
 * a release (C2) hands a message back unprocessed, the timeout of a consumer that is gone says
 * nothing of the thing behind it, and dead-letter-now (D3) is the consumer's verdict on one message.
 */
export type StormOutcome = 'success' | 'failure' | 'release' | 'deadConsumerTimeout' | 'deadLetterNow';

/** Outcomes of one bucket of the window: those whose `atMs` fell in `[index × bucketMs, (index + 1) × bucketMs)`. */
export interface WindowBucket {
  readonly index: number;
  readonly successes: number;
  readonly failures: number;
}

/** The breaker's state (DESIGN.md §11). */
export type BreakerState =
  /** Deliveries flow; outcomes fill the window. */
  | { readonly state: 'closed' }
  /** Nothing is delivered until `nextProbeAtMs`; `pauseMs` is the wait that led there. */
  | { readonly state: 'open'; readonly pauseMs: number; readonly nextProbeAtMs: number }
  /** One probe (`probeId`) is out; nothing else goes until its outcome. */
  | {
      readonly state: 'halfOpen';
      readonly pauseMs: number;
      readonly probeId: string;
      readonly probeSentAtMs: number;
    };

export type BreakerStateName = BreakerState['state'];

/** Every breaker state. */
export const BREAKER_STATES: readonly BreakerStateName[] = ['closed', 'open', 'halfOpen'];

/** A group's pause state: the breaker, its window, and an operator's manual pause, which holds regardless. */
export interface GroupPauseState {
  readonly breaker: BreakerState;
  readonly window: readonly WindowBucket[];
  /** Paused by hand (`POST /v1/groups/:group/pause`): nothing is delivered, not even a probe. */
  readonly manuallyPaused: boolean;
  /** Spread over queues (DESIGN.md §9): what the group's other queues last reported counting. */
  readonly elsewhere?: OutcomeCounts;
}

/** Counted outcomes of a window. */
export type OutcomeCounts = { readonly successes: number; readonly failures: number };

/** What happened to a group, fed to {@link groupPauseTransition}. Time is always an input. */
export type GroupPauseEvent =
  /** A delivery ended. `deliveryId` names it, so the probe's own outcome is told from stragglers'. */
  | {
      readonly type: 'outcome';
      readonly outcome: StormOutcome;
      readonly deliveryId: string;
      readonly atMs: number;
    }
  /** The probe the admission allowed went out. */
  | { readonly type: 'probeSent'; readonly deliveryId: string; readonly atMs: number }
  | { readonly type: 'pause'; readonly atMs: number }
  | { readonly type: 'resume'; readonly atMs: number }
  /** The group's config was replaced: a group whose rule is now off closes its breaker. */
  | { readonly type: 'ruleChanged'; readonly atMs: number }
  /** The other queues of the group (DESIGN.md §9) report what their windows hold now. */
  | { readonly type: 'elsewhereCounted'; readonly counts: OutcomeCounts; readonly atMs: number };

export type GroupPauseEventType = GroupPauseEvent['type'];

/** What the engine does after a transition: record a breaker transition (metrics, durable store). */
export type GroupPauseEffect =
  | { readonly type: 'breakerTransitioned'; readonly from: BreakerStateName; readonly to: BreakerStateName }
  | { readonly type: 'manualPauseChanged'; readonly paused: boolean };

/** The next pause state and what changed. Every event is accepted; an outcome that does not count changes nothing. */
export interface GroupPauseTransition {
  readonly state: GroupPauseState;
  readonly effects: readonly GroupPauseEffect[];
}

/** Why a delivery waits. */
export type HoldReason = 'manual' | 'failures';

/**
 * Whether a delivery may go now. `hold` says until when (absent: until an outcome or a resume);
 * a retry held by the breaker is postponed to `untilMs` without spending an attempt.
 */
export type Admission =
  | { readonly type: 'deliver' }
  | { readonly type: 'probe' }
  | { readonly type: 'hold'; readonly reason: HoldReason; readonly untilMs?: number };

/** A group that has never paused: closed, an empty window, not paused by hand. */
export function initialGroupPauseState(): GroupPauseState {
  return { breaker: { state: 'closed' }, window: [], manuallyPaused: false };
}

/** Fill a partial `pauseOnFailures` with {@link DEFAULT_PAUSE_ON_FAILURES}. */
export function resolvePauseOnFailures(input: Partial<PauseOnFailuresConfig> = {}): PauseOnFailuresConfig {
  return { ...DEFAULT_PAUSE_ON_FAILURES, ...stripUndefined(input) };
}

/** Problems of a `pauseOnFailures` config, empty when it is valid. */
export function validatePauseOnFailures(config: PauseOnFailuresConfig): readonly string[] {
  const issues: string[] = [];
  if (!(config.failureRatio > 0 && config.failureRatio <= 1)) issues.push('failureRatio must be in (0, 1]');
  if (!(Number.isInteger(config.minOutcomes) && config.minOutcomes >= 1))
    issues.push('minOutcomes must be an integer >= 1');
  for (const key of ['windowMs', 'pauseMs', 'maxPauseMs'] as const) {
    if (!(Number.isInteger(config[key]) && config[key] >= 1)) issues.push(`${key} must be an integer >= 1`);
  }
  if (config.maxPauseMs < config.pauseMs) issues.push('maxPauseMs must be >= pauseMs');
  return issues;
}

/** The counted outcomes of the window at `atMs`. */
export function windowCounts(
  state: GroupPauseState,
  config: PauseOnFailuresConfig,
  atMs: number,
): { readonly successes: number; readonly failures: number; readonly failureRatio: number } {
  let successes = 0;
  let failures = 0;
  for (const bucket of pruneWindow(state.window, config, atMs)) {
    successes += bucket.successes;
    failures += bucket.failures;
  }
  const total = successes + failures;
  return { successes, failures, failureRatio: total === 0 ? 0 : failures / total };
}

// Asked before every delivery: the common answers are shared, not allocated per call.
const DELIVER: Admission = Object.freeze({ type: 'deliver' });
const HOLD_MANUAL: Admission = Object.freeze({ type: 'hold', reason: 'manual' });

/**
 * Whether a first delivery or a due retry may go at `atMs`. A manual pause holds everything; an
 * open breaker holds everything until its probe time, then lets one delivery go as the probe; a
 * half-open breaker holds everything until the probe's outcome.
 */
export function admitDelivery(state: GroupPauseState, atMs: number): Admission {
  if (state.manuallyPaused) return HOLD_MANUAL;
  const breaker = state.breaker;
  switch (breaker.state) {
    case 'closed':
      return DELIVER;
    case 'open':
      return atMs >= breaker.nextProbeAtMs
        ? { type: 'probe' }
        : { type: 'hold', reason: 'failures', untilMs: breaker.nextProbeAtMs };
    case 'halfOpen':
      return { type: 'hold', reason: 'failures' };
    default:
      return assertNever(breaker);
  }
}

/**
 * The failure-storm rule: the next pause state after `event`, and its effects. `config` absent
 * means the rule is off for the group: outcomes are not collected and the breaker stays closed,
 * but a manual pause still holds.
 */
export function groupPauseTransition(
  state: GroupPauseState,
  event: GroupPauseEvent,
  config: PauseOnFailuresConfig | undefined,
): GroupPauseTransition {
  switch (event.type) {
    case 'pause':
      return state.manuallyPaused
        ? { state, effects: [] }
        : {
            state: { ...state, manuallyPaused: true },
            effects: [{ type: 'manualPauseChanged', paused: true }],
          };
    case 'resume': {
      // An operator's resume is a verdict that the outage is over: the breaker closes too, and
      // the window starts empty so the old failures cannot trip it again at once.
      const effects: GroupPauseEffect[] = [];
      if (state.manuallyPaused) effects.push({ type: 'manualPauseChanged', paused: false });
      if (state.breaker.state !== 'closed') {
        effects.push({ type: 'breakerTransitioned', from: state.breaker.state, to: 'closed' });
      }
      if (effects.length === 0) return { state, effects };
      return { state: { breaker: { state: 'closed' }, window: [], manuallyPaused: false }, effects };
    }
    case 'ruleChanged':
      // Turning the rule off must not leave a breaker open that nothing can close any more.
      if (config !== undefined || state.breaker.state === 'closed') return { state, effects: [] };
      return {
        state: closedAfresh(state),
        effects: [{ type: 'breakerTransitioned', from: state.breaker.state, to: 'closed' }],
      };
    case 'probeSent': {
      if (
        config === undefined ||
        state.breaker.state !== 'open' ||
        event.atMs < state.breaker.nextProbeAtMs
      ) {
        return { state, effects: [] };
      }
      const breaker: BreakerState = {
        state: 'halfOpen',
        pauseMs: state.breaker.pauseMs,
        probeId: event.deliveryId,
        probeSentAtMs: event.atMs,
      };
      return {
        state: { ...state, breaker },
        effects: [{ type: 'breakerTransitioned', from: 'open', to: 'halfOpen' }],
      };
    }
    case 'outcome':
      return outcomeTransition(state, event, config);
    case 'elsewhereCounted': {
      if (config === undefined) return { state, effects: [] };
      return tripIfStorm({ ...state, elsewhere: event.counts }, config, event.atMs);
    }
    default:
      return assertNever(event);
  }
}

function outcomeTransition(
  state: GroupPauseState,
  event: Extract<GroupPauseEvent, { type: 'outcome' }>,
  config: PauseOnFailuresConfig | undefined,
): GroupPauseTransition {
  if (config === undefined) return { state, effects: [] };
  const counted = event.outcome === 'success' || event.outcome === 'failure';
  const breaker = state.breaker;
  if (breaker.state === 'halfOpen' && event.deliveryId === breaker.probeId) {
    if (event.outcome === 'success') {
      return {
        state: closedAfresh(state),
        effects: [{ type: 'breakerTransitioned', from: 'halfOpen', to: 'closed' }],
      };
    }
    // A failed probe doubles the wait; a probe that told nothing (released, its consumer gone,
    // dead-lettered by hand) is sent again at once at the same wait.
    const pauseMs =
      event.outcome === 'failure' ? Math.min(breaker.pauseMs * 2, config.maxPauseMs) : breaker.pauseMs;
    const nextProbeAtMs = event.outcome === 'failure' ? event.atMs + pauseMs : event.atMs;
    return {
      state: { ...state, breaker: { state: 'open', pauseMs, nextProbeAtMs } },
      effects: [{ type: 'breakerTransitioned', from: 'halfOpen', to: 'open' }],
    };
  }
  if (!counted) return { state, effects: [] };
  const window = addToWindow(
    pruneWindow(state.window, config, event.atMs),
    config,
    event.atMs,
    event.outcome === 'failure',
  );
  const next: GroupPauseState = { ...state, window };
  // Outcomes of deliveries that were already out when the breaker opened fill the window (for
  // the admin view) but never move an open or half-open breaker: only the probe does.
  return tripIfStorm(next, config, event.atMs);
}

/** Closed with nothing counted, not even elsewhere: the failures that opened it cannot reopen it at once. */
function closedAfresh(state: GroupPauseState): GroupPauseState {
  return { breaker: { state: 'closed' }, window: [], manuallyPaused: state.manuallyPaused };
}

/**
 * A closed breaker opens when the window, with the other queues' outcomes where the group has more
 * than one, holds at least `minOutcomes` counted outcomes, `failureRatio` of them failures, and its
 * own outcomes fail at that ratio too: a queue that delivers fine is not paused by the others' past.
 */
function tripIfStorm(
  state: GroupPauseState,
  config: PauseOnFailuresConfig,
  atMs: number,
): GroupPauseTransition {
  if (state.breaker.state !== 'closed') return { state, effects: [] };
  const own = windowCounts(state, config, atMs);
  const ownTotal = own.successes + own.failures;
  const total = ownTotal + (state.elsewhere?.successes ?? 0) + (state.elsewhere?.failures ?? 0);
  const failures = own.failures + (state.elsewhere?.failures ?? 0);
  const storm = total >= config.minOutcomes && failures >= config.failureRatio * total;
  if (storm && ownTotal > 0 && own.failures >= config.failureRatio * ownTotal) {
    const pauseMs = Math.min(config.pauseMs, config.maxPauseMs);
    return {
      state: { ...state, breaker: { state: 'open', pauseMs, nextProbeAtMs: atMs + pauseMs } },
      effects: [{ type: 'breakerTransitioned', from: 'closed', to: 'open' }],
    };
  }
  return { state, effects: [] };
}

function bucketMsOf(config: PauseOnFailuresConfig): number {
  return config.windowMs / FAILURE_WINDOW_BUCKETS;
}

function pruneWindow(
  window: readonly WindowBucket[],
  config: PauseOnFailuresConfig,
  atMs: number,
): readonly WindowBucket[] {
  const oldestKept = Math.floor(atMs / bucketMsOf(config)) - FAILURE_WINDOW_BUCKETS + 1;
  return window.some((bucket) => bucket.index < oldestKept)
    ? window.filter((bucket) => bucket.index >= oldestKept)
    : window;
}

function addToWindow(
  window: readonly WindowBucket[],
  config: PauseOnFailuresConfig,
  atMs: number,
  failed: boolean,
): readonly WindowBucket[] {
  const index = Math.floor(atMs / bucketMsOf(config));
  const found = window.find((bucket) => bucket.index === index);
  const base = found ?? { index, successes: 0, failures: 0 };
  const bucket: WindowBucket = failed
    ? { ...base, failures: base.failures + 1 }
    : { ...base, successes: base.successes + 1 };
  const rest = window.filter((each) => each.index !== index);
  // Bounded: at most FAILURE_WINDOW_BUCKETS buckets survive pruning, plus one from a clock that
  // went back, which the next prune drops.
  return [...rest, bucket].sort((a, b) => a.index - b.index);
}

/**
 * The durable part of a pause state, as the store keeps it with the group's record. The window
 * is not kept: after a restart it starts empty, which can only delay a trip, never cause one.
 */
export interface StoredGroupPause {
  readonly breaker: BreakerState;
  readonly manuallyPaused: boolean;
}

/**
 * A pause state from its stored form. A half-open breaker comes back open with its probe due at
 * `atMs`: the probe's delivery did not survive the restart as a probe, so another one goes.
 */
export function restoreGroupPauseState(stored: StoredGroupPause | undefined, atMs: number): GroupPauseState {
  if (stored === undefined) return initialGroupPauseState();
  const breaker: BreakerState =
    stored.breaker.state === 'halfOpen'
      ? { state: 'open', pauseMs: stored.breaker.pauseMs, nextProbeAtMs: atMs }
      : stored.breaker;
  return { breaker, window: [], manuallyPaused: stored.manuallyPaused };
}

/** The durable part of a pause state (see {@link StoredGroupPause}). */
export function storedGroupPause(state: GroupPauseState): StoredGroupPause {
  return { breaker: state.breaker, manuallyPaused: state.manuallyPaused };
}

function stripUndefined<T extends object>(input: T): Partial<T> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as Partial<T>;
}
