import { cpuTimeOf } from './cpu-time.js';
import { rate, runPool } from './pool.js';
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

/** A throughput workload's figures: its rate, and what each message cost the broker's CPU. */
export interface Throughput {
  readonly rate: number;
  /** The broker's CPU time (user + system, from /proc) over the measured span, per message, in µs. */
  readonly brokerCpuUs: number;
  /** This process's CPU time (the clients') over the same span, per message, in µs. */
  readonly clientCpuUs: number;
}

/**
 * Start measuring the broker (and, spread, its peers), this process and the clock; `stop(messages)`
 * gives the rate and the CPU per message since. CPU time counts in 10 ms ticks, so a span of a few seconds
 * reads it to well under 1 %; on a machine shared with other work it is the steadier figure.
 */
export function startThroughput(broker: BenchProcess): { stop(messages: number): Throughput } {
  const everyBroker = [broker, ...(broker.spreadPeers ?? [])];
  const cpuMs = () => everyBroker.reduce((sum, each) => sum + cpuTimeOf(each.child.pid ?? 0), 0);
  const cpuAtStart = cpuMs();
  const clientCpuAtStart = process.cpuUsage();
  const startedAt = performance.now();
  return {
    stop: (messages) => {
      const client = process.cpuUsage(clientCpuAtStart);
      return {
        rate: rate(messages, startedAt),
        brokerCpuUs: ((cpuMs() - cpuAtStart) * 1_000) / messages,
        clientCpuUs: (client.user + client.system) / messages,
      };
    },
  };
}

/**
 * W1's client pattern, whatever the client: `warmUp` sends unmeasured, then `messages` measured
 * (in the profiling window, when there is one), each with up to `inFlight` at once, each awaited.
 */
export async function measuredSends(
  broker: BenchProcess,
  options: RicochetRunOptions,
  counts: { readonly warmUp: number; readonly messages: number; readonly inFlight: number },
  send: () => Promise<void>,
): Promise<Throughput> {
  await runPool(counts.warmUp, counts.inFlight, send);
  await options.window?.begin(broker);
  const measured = startThroughput(broker);
  await runPool(counts.messages, counts.inFlight, send);
  const result = measured.stop(counts.messages);
  await options.window?.end(broker);
  return result;
}
