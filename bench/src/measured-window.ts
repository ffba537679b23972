import type { BenchProcess, BrokerProfileOptions } from './processes.js';

/**
 * Hooks around the measured part of a workload, for `pnpm bench:profile`: `begin` right before it,
 * `end` right after, so that what they start (profilers, the event-loop histogram) sees the
 * measured work and none of the set-up.
 */
export interface MeasuredWindow {
  begin(broker: BenchProcess): Promise<void>;
  end(broker: BenchProcess): Promise<void>;
}

/** How a workload runs Ricochet when it is profiled rather than timed. */
export interface RicochetRunOptions {
  readonly window?: MeasuredWindow;
  /** Preload the profile probe into the broker (profile/profile-probe.mjs). */
  readonly profile?: BrokerProfileOptions;
}
