import type { SlicedExposition } from './sliced-exposition.js';

/** Per-group numbers the gauges read at scrape time. */
export interface GroupGaugeSource {
  groupGauges(): Iterable<{ readonly group: string; readonly inflight: number; readonly backlog: number }>;
}

/** A group's delivery-rate limit and its measured rate (X5), as one engine knows them. */
export interface DeliveryRateGauge {
  readonly group: string;
  /** The group's `maxDeliveriesPerSecond` (the whole group's, not an engine's share). */
  readonly limitPerSecond: number;
  /** Deliveries per second the engine made to the group over its last window of a second or more. */
  readonly ratePerSecond: number;
}

/**
 * What one scrape reads of the engines, once, for the families that share it: the inflight and
 * backlog of every group (one pass over the groups for both), and the delivery rates summed over
 * the engines. Each pass goes at the render's pace, so it too lets the loop turn between slices.
 */
export class Scrape {
  readonly #out: SlicedExposition;
  readonly #source: GroupGaugeSource;
  readonly #rateSources: ReadonlySet<() => Iterable<DeliveryRateGauge>>;
  #groups: Promise<{ inflight: Map<string, number>; backlog: Map<string, number> }> | undefined;
  #rates: Promise<{ limits: Map<string, number>; rates: Map<string, number> }> | undefined;

  constructor(
    out: SlicedExposition,
    source: GroupGaugeSource,
    rateSources: ReadonlySet<() => Iterable<DeliveryRateGauge>>,
  ) {
    this.#out = out;
    this.#source = source;
    this.#rateSources = rateSources;
  }

  async groups(): Promise<{ inflight: Map<string, number>; backlog: Map<string, number> }> {
    this.#groups ??= (async () => {
      const inflight = new Map<string, number>();
      const backlog = new Map<string, number>();
      for (const gauges of this.#source.groupGauges()) {
        inflight.set(gauges.group, gauges.inflight);
        backlog.set(gauges.group, gauges.backlog);
        const slice = this.#out.tick();
        if (slice) await slice;
      }
      return { inflight, backlog };
    })();
    return this.#groups;
  }

  /** Per group, its limit and its rate summed over the engines (the queues of a partitioned store). */
  async rates(): Promise<{ limits: Map<string, number>; rates: Map<string, number> }> {
    this.#rates ??= (async () => {
      const limits = new Map<string, number>();
      const rates = new Map<string, number>();
      for (const source of this.#rateSources) {
        for (const { group, limitPerSecond, ratePerSecond } of source()) {
          if (!limits.has(group)) limits.set(group, limitPerSecond);
          rates.set(group, (rates.get(group) ?? 0) + ratePerSecond);
          const slice = this.#out.tick();
          if (slice) await slice;
        }
      }
      return { limits, rates };
    })();
    return this.#rates;
  }
}
