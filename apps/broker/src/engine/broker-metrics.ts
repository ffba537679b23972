import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { LabelSeries, LabelTexts, seriesKey } from './label-series.js';
import { type DeliveryRateGauge, type GroupGaugeSource, type GroupValues, Scrape } from './metrics-scrape.js';
import { SlicedExposition, type SliceOptions } from './sliced-exposition.js';

export type { DeliveryRateGauge, GroupGaugeSource };

/** The prefix of every metric the broker exports, its own and Node's process metrics alike. */
const METRIC_PREFIX = 'ricochet_';

type GroupCounterName = 'delivered' | 'acked' | 'retried' | 'deadLettered' | 'released';

/** {@link BrokerMetrics.counterTotals}: counts since the broker started (not stored across restarts). */
export interface CounterTotals {
  readonly topics: readonly { readonly name: string; readonly sent: number }[];
  readonly groups: readonly ({ readonly name: string } & Readonly<Record<GroupCounterName, number>>)[];
}

/**
 * The broker's Prometheus metrics, in a registry of its own (never prom-client's global one, so
 * two brokers in one process — tests — do not collide).
 */
export class BrokerMetrics {
  readonly registry = new Registry();
  // Every family labelled by group or topic (as many series as tenants) is counted here, in a
  // LabelSeries, and written by `render()` from there in slices; prom-client holds a twin of each
  // whose `collect` copies the series in, for whoever reads it through the registry (tests).
  readonly #sentCounts = new LabelSeries(['topic']);
  readonly #deliveredCounts = new LabelSeries(['group']);
  readonly #ackedCounts = new LabelSeries(['group']);
  readonly #retriedCounts = new LabelSeries(['group']);
  readonly #deadLetteredCounts = new LabelSeries(['group']);
  readonly #releasedCounts = new LabelSeries(['group']);
  readonly #broadcastFailures = new LabelSeries(['group']);
  readonly #groupPaused = new LabelSeries(['group', 'reason']);
  readonly #breakerTransitions = new LabelSeries(['group', 'from', 'to']);
  readonly #deliveriesHeld = new LabelSeries(['group', 'reason']);
  readonly #expired = new LabelSeries(['group']);
  readonly #retentionDeleted = new LabelSeries(['topic']);
  /** The families `render()` writes itself, by name; the others prom-client renders. */
  readonly #ownFamilies = new Map<string, (out: SlicedExposition, scrape: Scrape) => Promise<void>>();
  /** Per group name, its label text, for the gauges read anew at each scrape. */
  readonly #groupLabelTexts = new LabelTexts('group');
  readonly #source: GroupGaugeSource;
  readonly #slicing: SliceOptions;
  /** The render in progress, if one is. */
  #rendering: Promise<readonly string[]> | undefined;
  readonly #rejected: Counter<'code'>;
  /** Every engine's delivery-rate gauges: one engine's, or each queue's of a partitioned store. */
  readonly #rateSources = new Set<() => Iterable<DeliveryRateGauge>>();
  readonly #sendLatency: Histogram;
  readonly #retryLateness: Histogram;
  readonly #retentionBatch: Histogram;
  readonly #watermark: Gauge<'watermark'>;
  readonly #storeBytes: Gauge;
  readonly #diskFreeBytes: Gauge;

  /**
   * @param source the per-group numbers the inflight and backlog gauges read at each scrape
   * @param slicing how `render()` shares the event loop (@see {@link SlicedExposition})
   */
  constructor(source: GroupGaugeSource, slicing: SliceOptions = {}) {
    this.#source = source;
    this.#slicing = slicing;
    // prom-client's own names already say `process_` or `nodejs_`: the one prefix every Ricochet
    // metric shares goes in front of them (`ricochet_process_cpu_seconds_total`).
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    // prom-client adds a gauge named `…_total` beside each of the per-type `nodejs_active_*`
    // gauges; Prometheus keeps `_total` for counters (`promtool check metrics` refuses them), and
    // the sum over the per-type gauge says the same.
    for (const name of ['handles', 'requests', 'resources']) {
      this.registry.removeSingleMetric(`${METRIC_PREFIX}nodejs_active_${name}_total`);
    }
    const registers = [this.registry];
    this.#seriesFamily(
      'counter',
      'ricochet_messages_sent_total',
      'Messages stored by send',
      this.#sentCounts,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_messages_delivered_total',
      'Deliveries to consumers, retries included',
      this.#deliveredCounts,
    );
    this.#seriesFamily('counter', 'ricochet_messages_acked_total', 'Messages committed', this.#ackedCounts);
    this.#seriesFamily(
      'counter',
      'ricochet_messages_retried_total',
      'Failed deliveries that will be delivered again (WaitingRetry or Ready after a lease expired)',
      this.#retriedCounts,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_messages_dead_lettered_total',
      'Messages moved to the group DLQ',
      this.#deadLetteredCounts,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_messages_released_total',
      'Deliveries handed back unprocessed (not failures, C2)',
      this.#releasedCounts,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_broadcast_failures_total',
      'Broadcast deliveries that failed or timed out: recorded, never retried (B1)',
      this.#broadcastFailures,
    );
    this.#seriesFamily(
      'gauge',
      'ricochet_group_paused',
      '1 while the group holds its deliveries, by reason: manual, or failures (its breaker is open or half-open; DESIGN.md §11)',
      this.#groupPaused,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_group_breaker_transitions_total',
      "Moves of a group's failure-storm breaker between closed, open and halfOpen (DESIGN.md §11)",
      this.#breakerTransitions,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_group_deliveries_held_total',
      'Times a consumer asked for messages of a group and got none, by reason: paused (manual, failures), or over its maxDeliveriesPerSecond (rate)',
      this.#deliveriesHeld,
    );
    this.#scrapedGroupFamily(
      'ricochet_group_max_deliveries_per_second',
      "The group's maxDeliveriesPerSecond, for groups that have one (X5)",
      async (scrape) => (await scrape.rates()).limits,
    );
    this.#scrapedGroupFamily(
      'ricochet_group_delivery_rate_per_second',
      'Deliveries per second to a group with a maxDeliveriesPerSecond, over the last window of a second or more (X5)',
      async (scrape) => (await scrape.rates()).rates,
    );
    this.#rejected = new Counter({
      name: 'ricochet_requests_rejected_total',
      help: 'Requests or messages answered with an error, by error code',
      labelNames: ['code'],
      registers,
    });
    this.#sendLatency = new Histogram({
      name: 'ricochet_send_latency_seconds',
      help: 'From a send frame arriving to its receipts (after the durable commit)',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.#retryLateness = new Histogram({
      name: 'ricochet_retry_lateness_seconds',
      help: "From a push retry's due time to the broker making it Ready again (P3)",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.#seriesFamily(
      'counter',
      'ricochet_messages_expired_total',
      'Messages a group skipped because retention deleted them before it consumed them',
      this.#expired,
    );
    this.#seriesFamily(
      'counter',
      'ricochet_retention_deleted_messages_total',
      'Messages deleted by retention (age or size), per topic',
      this.#retentionDeleted,
    );
    this.#retentionBatch = new Histogram({
      name: 'ricochet_retention_batch_seconds',
      help: 'How long one retention batch held the event loop',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05],
      registers,
    });
    this.#watermark = new Gauge({
      name: 'ricochet_store_watermark_exceeded',
      help: '1 while sends are refused because of this watermark (min_free_disk, max_store), else 0',
      labelNames: ['watermark'],
      registers,
    });
    this.#storeBytes = new Gauge({
      name: 'ricochet_store_bytes',
      help: 'Bytes the store has in use (LMDB pages in use; free pages, which it reuses, not counted)',
      registers,
    });
    this.#diskFreeBytes = new Gauge({
      name: 'ricochet_disk_free_bytes',
      help: 'Free bytes on the file system of the data directory',
      registers,
    });
    this.#watermark.set({ watermark: 'min_free_disk' }, 0);
    this.#watermark.set({ watermark: 'max_store' }, 0);
    this.#scrapedGroupFamily(
      'ricochet_group_inflight_messages',
      'Messages leased to consumers',
      async (scrape) => (await scrape.groups()).inflight,
    );
    this.#scrapedGroupFamily(
      'ricochet_group_backlog_messages',
      'Messages of the group not yet committed or dead-lettered',
      async (scrape) => (await scrape.groups()).backlog,
    );
  }

  messagesSent(topic: string, count: number): void {
    this.#sentCounts.add(topic, count);
  }
  delivered(group: string, count = 1): void {
    this.#deliveredCounts.add(group, count);
  }
  acked(group: string, count = 1): void {
    this.#ackedCounts.add(group, count);
  }
  retried(group: string): void {
    this.#retriedCounts.add(group, 1);
  }
  deadLettered(group: string, count = 1): void {
    this.#deadLetteredCounts.add(group, count);
  }
  released(group: string, count = 1): void {
    this.#releasedCounts.add(group, count);
  }
  broadcastFailed(group: string): void {
    this.#broadcastFailures.add(group, 1);
  }
  groupPaused(group: string, reason: 'manual' | 'failures', paused: boolean): void {
    this.#groupPaused.set(seriesKey(group, reason), paused ? 1 : 0, [group, reason]);
  }
  breakerTransitioned(group: string, from: string, to: string): void {
    this.#breakerTransitions.add(seriesKey(group, from, to), 1, [group, from, to]);
  }
  deliveriesHeld(group: string, reason: 'manual' | 'failures' | 'rate'): void {
    this.#deliveriesHeld.add(seriesKey(group, reason), 1, [group, reason]);
  }
  /** Read an engine's delivery-rate gauges at every scrape, until the returned function is called. */
  addDeliveryRates(source: () => Iterable<DeliveryRateGauge>): () => void {
    this.#rateSources.add(source);
    return () => this.#rateSources.delete(source);
  }
  rejected(code: number): void {
    this.#rejected.inc({ code: String(code) });
  }
  sendLatency(seconds: number): void {
    this.#sendLatency.observe(seconds);
  }
  retryLateness(seconds: number): void {
    this.#retryLateness.observe(seconds);
  }

  messagesExpired(group: string, count: number): void {
    this.#expired.add(group, count);
  }
  retentionDeleted(topic: string, count: number): void {
    this.#retentionDeleted.add(topic, count);
  }
  retentionBatch(seconds: number): void {
    this.#retentionBatch.observe(seconds);
  }
  storeLevels(storeBytes: number, diskFreeBytes: number | undefined): void {
    this.#storeBytes.set(storeBytes);
    if (diskFreeBytes !== undefined) this.#diskFreeBytes.set(diskFreeBytes);
  }
  watermarkExceeded(watermark: 'min_free_disk' | 'max_store', exceeded: boolean): void {
    this.#watermark.set({ watermark }, exceeded ? 1 : 0);
  }
  /**
   * The message counters since the broker started, per topic and per group, for `GET
   * /v1/counters`: a dashboard derives rates from two readings, without parsing `/metrics`.
   */
  async counterTotals(): Promise<CounterTotals> {
    const topics = [...this.#sentCounts.values()].map(({ values, value }) => ({
      name: values[0] ?? '',
      sent: value,
    }));
    const groups = new Map<string, Record<GroupCounterName, number>>();
    const perGroup: [GroupCounterName, LabelSeries<'group'>][] = [
      ['delivered', this.#deliveredCounts],
      ['acked', this.#ackedCounts],
      ['retried', this.#retriedCounts],
      ['deadLettered', this.#deadLetteredCounts],
      ['released', this.#releasedCounts],
    ];
    for (const [name, counts] of perGroup) {
      for (const { values, value } of counts.values()) {
        const group = values[0] ?? '';
        const totals = groups.get(group) ?? {
          delivered: 0,
          acked: 0,
          retried: 0,
          deadLettered: 0,
          released: 0,
        };
        totals[name] = value;
        groups.set(group, totals);
      }
    }
    return { topics, groups: [...groups].map(([name, totals]) => ({ name, ...totals })) };
  }

  /** The exposition text of {@link renderSlices}, in one string. */
  async render(): Promise<string> {
    return (await this.renderSlices()).join('');
  }

  /**
   * The exposition text for `GET /metrics`, in the registry's order, as the slices it was written
   * in (`GET /metrics` streams them). The families labelled by group or topic are written here
   * from their series, a slice of the loop at a time (see {@link SlicedExposition}); the others,
   * a few lines each, prom-client renders.
   */
  renderSlices(): Promise<readonly string[]> {
    // Scrapes that come while one renders (two Prometheus servers, a dashboard) share its text.
    this.#rendering ??= this.#renderSlices().finally(() => {
      this.#rendering = undefined;
    });
    return this.#rendering;
  }

  async #renderSlices(): Promise<readonly string[]> {
    const out = new SlicedExposition(this.#slicing);
    const scrape = new Scrape(out, this.#source, this.#rateSources, this.#groupLabelTexts);
    for (const metric of this.registry.getMetricsAsArray()) {
      const name = (metric as unknown as { readonly name: string }).name;
      const own = this.#ownFamilies.get(name);
      if (own !== undefined) await own(out, scrape);
      else await out.rendered(await this.registry.getSingleMetricAsString(name));
    }
    return out.slices();
  }

  /** A family whose series `series` holds: written by `render()`, and a prom-client twin. */
  #seriesFamily<TLabel extends string>(
    type: 'counter' | 'gauge',
    name: string,
    help: string,
    series: LabelSeries<TLabel>,
  ): void {
    const twin = { name, help, labelNames: series.labelNames, registers: [this.registry] };
    if (type === 'counter') {
      new Counter({
        ...twin,
        collect() {
          this.reset();
          for (const { labels, value } of series.labelled()) this.inc(labels, value);
        },
      });
    } else {
      new Gauge({
        ...twin,
        collect() {
          this.reset();
          for (const { labels, value } of series.labelled()) this.set(labels, value);
        },
      });
    }
    this.#ownFamilies.set(name, async (out) => {
      out.family(name, help, type);
      for (const { labelText, value } of series.values()) {
        const slice = out.line(name, labelText, value);
        if (slice) await slice;
      }
    });
  }

  /** A gauge family by group whose values are read anew at each scrape: written by `render()`, and a twin. */
  #scrapedGroupFamily(name: string, help: string, pick: (scrape: Scrape) => Promise<GroupValues>): void {
    const source = this.#source;
    const rateSources = this.#rateSources;
    const labelTexts = this.#groupLabelTexts;
    new Gauge({
      name,
      help,
      labelNames: ['group'],
      registers: [this.registry],
      async collect() {
        this.reset();
        const { groups, values } = await pick(
          new Scrape(new SlicedExposition(), source, rateSources, labelTexts),
        );
        for (const [index, group] of groups.entries()) this.set({ group }, values[index] ?? 0);
      },
    });
    this.#ownFamilies.set(name, async (out, scrape) => {
      const { labelTexts, values } = await pick(scrape);
      out.family(name, help, 'gauge');
      for (let index = 0; index < values.length; index++) {
        const slice = out.line(name, labelTexts[index] ?? '', values[index] ?? 0);
        if (slice) await slice;
      }
    });
  }
}
