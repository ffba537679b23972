import type { LabelTexts } from './label-series.js';
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
 * One gauge family by group as a scrape read it: per group, its name, its label text and its
 * value, at one index. Arrays rather than maps: a scrape of 100,000 groups spent more on building
 * and looking up two maps by name than on anything else.
 */
export interface GroupValues {
  readonly groups: readonly string[];
  readonly labelTexts: readonly string[];
  readonly values: readonly number[];
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
  readonly #labelTexts: LabelTexts;
  #groups: Promise<{ inflight: GroupValues; backlog: GroupValues }> | undefined;
  #rates: Promise<{ limits: GroupValues; rates: GroupValues }> | undefined;

  constructor(
    out: SlicedExposition,
    source: GroupGaugeSource,
    rateSources: ReadonlySet<() => Iterable<DeliveryRateGauge>>,
    labelTexts: LabelTexts,
  ) {
    this.#out = out;
    this.#source = source;
    this.#rateSources = rateSources;
    this.#labelTexts = labelTexts;
  }

  groups(): Promise<{ inflight: GroupValues; backlog: GroupValues }> {
    this.#groups ??= (async () => {
      const groups: string[] = [];
      const labelTexts: string[] = [];
      const inflight: number[] = [];
      const backlog: number[] = [];
      for (const gauges of this.#source.groupGauges()) {
        groups.push(gauges.group);
        labelTexts.push(this.#labelTexts.of(gauges.group));
        inflight.push(gauges.inflight);
        backlog.push(gauges.backlog);
        const slice = this.#out.tick();
        if (slice) await slice;
      }
      return {
        inflight: { groups, labelTexts, values: inflight },
        backlog: { groups, labelTexts, values: backlog },
      };
    })();
    return this.#groups;
  }

  /** Per group, its limit and its rate summed over the engines (the queues of a partitioned store). */
  rates(): Promise<{ limits: GroupValues; rates: GroupValues }> {
    this.#rates ??= (async () => {
      const sums = new Map<string, { limit: number; rate: number }>();
      for (const source of this.#rateSources) {
        for (const { group, limitPerSecond, ratePerSecond } of source()) {
          const sum = sums.get(group);
          if (sum === undefined) sums.set(group, { limit: limitPerSecond, rate: ratePerSecond });
          else sum.rate += ratePerSecond;
          const slice = this.#out.tick();
          if (slice) await slice;
        }
      }
      const groups = [...sums.keys()];
      const labelTexts = groups.map((group) => this.#labelTexts.of(group));
      const limits = [...sums.values()].map(({ limit }) => limit);
      const rates = [...sums.values()].map(({ rate }) => rate);
      return { limits: { groups, labelTexts, values: limits }, rates: { groups, labelTexts, values: rates } };
    })();
    return this.#rates;
  }
}
