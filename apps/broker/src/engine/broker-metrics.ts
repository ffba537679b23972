import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** The prefix of every metric the broker exports, its own and Node's process metrics alike. */
const METRIC_PREFIX = 'ricochet_';

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
  // The counters the message path moves, once or more per message: counted here and handed to
  // prom-client when it collects, since its `inc` hashes the labels on every call (a few per cent
  // of the broker's CPU on a push stream).
  readonly #sentCounts = new LabelCounts();
  readonly #deliveredCounts = new LabelCounts();
  readonly #ackedCounts = new LabelCounts();
  readonly #retriedCounts = new LabelCounts();
  readonly #deadLetteredCounts = new LabelCounts();
  readonly #releasedCounts = new LabelCounts();
  readonly #sent: Counter<'topic'>;
  readonly #delivered: Counter<'group'>;
  readonly #acked: Counter<'group'>;
  readonly #retried: Counter<'group'>;
  readonly #deadLettered: Counter<'group'>;
  readonly #released: Counter<'group'>;
  readonly #broadcastFailures: Counter<'group'>;
  readonly #groupPaused: Gauge<'group' | 'reason'>;
  readonly #breakerTransitions: Counter<'group' | 'from' | 'to'>;
  readonly #deliveriesHeld: Counter<'group' | 'reason'>;
  readonly #rejected: Counter<'code'>;
  /** Every engine's delivery-rate gauges: one engine's, or each queue's of a partitioned store. */
  readonly #rateSources = new Set<() => Iterable<DeliveryRateGauge>>();
  readonly #sendLatency: Histogram;
  readonly #retryLateness: Histogram;
  readonly #expired: Counter<'group'>;
  readonly #retentionDeleted: Counter<'topic'>;
  readonly #retentionBatch: Histogram;
  readonly #watermark: Gauge<'watermark'>;
  readonly #storeBytes: Gauge;
  readonly #diskFreeBytes: Gauge;

  constructor(source: GroupGaugeSource) {
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
    this.#sent = new Counter({
      name: 'ricochet_messages_sent_total',
      help: 'Messages stored by send',
      labelNames: ['topic'],
      registers,
      collect: collectFrom(this.#sentCounts, 'topic'),
    });
    this.#delivered = new Counter({
      name: 'ricochet_messages_delivered_total',
      help: 'Deliveries to consumers, retries included',
      labelNames: ['group'],
      registers,
      collect: collectFrom(this.#deliveredCounts, 'group'),
    });
    this.#acked = new Counter({
      name: 'ricochet_messages_acked_total',
      help: 'Messages committed',
      labelNames: ['group'],
      registers,
      collect: collectFrom(this.#ackedCounts, 'group'),
    });
    this.#retried = new Counter({
      name: 'ricochet_messages_retried_total',
      help: 'Failed deliveries that will be delivered again (WaitingRetry or Ready after a lease expired)',
      labelNames: ['group'],
      registers,
      collect: collectFrom(this.#retriedCounts, 'group'),
    });
    this.#deadLettered = new Counter({
      name: 'ricochet_messages_dead_lettered_total',
      help: 'Messages moved to the group DLQ',
      labelNames: ['group'],
      registers,
      collect: collectFrom(this.#deadLetteredCounts, 'group'),
    });
    this.#released = new Counter({
      name: 'ricochet_messages_released_total',
      help: 'Deliveries handed back unprocessed (not failures, C2)',
      labelNames: ['group'],
      registers,
      collect: collectFrom(this.#releasedCounts, 'group'),
    });
    this.#broadcastFailures = new Counter({
      name: 'ricochet_broadcast_failures_total',
      help: 'Broadcast deliveries that failed or timed out: recorded, never retried (B1)',
      labelNames: ['group'],
      registers,
    });
    this.#groupPaused = new Gauge({
      name: 'ricochet_group_paused',
      help: '1 while the group holds its deliveries, by reason: manual, or failures (its breaker is open or half-open; DESIGN.md §11)',
      labelNames: ['group', 'reason'],
      registers,
    });
    this.#breakerTransitions = new Counter({
      name: 'ricochet_group_breaker_transitions_total',
      help: "Moves of a group's failure-storm breaker between closed, open and halfOpen (DESIGN.md §11)",
      labelNames: ['group', 'from', 'to'],
      registers,
    });
    this.#deliveriesHeld = new Counter({
      name: 'ricochet_group_deliveries_held_total',
      help: 'Times a consumer asked for messages of a group and got none, by reason: paused (manual, failures), or over its maxDeliveriesPerSecond (rate)',
      labelNames: ['group', 'reason'],
      registers,
    });
    const rateSources = this.#rateSources;
    new Gauge({
      name: 'ricochet_group_max_deliveries_per_second',
      help: "The group's maxDeliveriesPerSecond, for groups that have one (X5)",
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const [group, { limit }] of sumRates(rateSources)) this.set({ group }, limit);
      },
    });
    new Gauge({
      name: 'ricochet_group_delivery_rate_per_second',
      help: 'Deliveries per second to a group with a maxDeliveriesPerSecond, over the last window of a second or more (X5)',
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const [group, { rate }] of sumRates(rateSources)) this.set({ group }, rate);
      },
    });
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
    this.#expired = new Counter({
      name: 'ricochet_messages_expired_total',
      help: 'Messages a group skipped because retention deleted them before it consumed them',
      labelNames: ['group'],
      registers,
    });
    this.#retentionDeleted = new Counter({
      name: 'ricochet_retention_deleted_messages_total',
      help: 'Messages deleted by retention (age or size), per topic',
      labelNames: ['topic'],
      registers,
    });
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
    new Gauge({
      name: 'ricochet_group_inflight_messages',
      help: 'Messages leased to consumers',
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const { group, inflight } of source.groupGauges()) this.set({ group }, inflight);
      },
    });
    new Gauge({
      name: 'ricochet_group_backlog_messages',
      help: 'Messages of the group not yet committed or dead-lettered',
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const { group, backlog } of source.groupGauges()) this.set({ group }, backlog);
      },
    });
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
    this.#broadcastFailures.inc({ group });
  }
  groupPaused(group: string, reason: 'manual' | 'failures', paused: boolean): void {
    this.#groupPaused.set({ group, reason }, paused ? 1 : 0);
  }
  breakerTransitioned(group: string, from: string, to: string): void {
    this.#breakerTransitions.inc({ group, from, to });
  }
  deliveriesHeld(group: string, reason: 'manual' | 'failures' | 'rate'): void {
    this.#deliveriesHeld.inc({ group, reason });
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
    this.#expired.inc({ group }, count);
  }
  retentionDeleted(topic: string, count: number): void {
    this.#retentionDeleted.inc({ topic }, count);
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
    const topics = new Map<string, { sent: number }>();
    for (const { labels, value } of (await this.#sent.get()).values) {
      topics.set(String(labels.topic), { sent: value });
    }
    const groups = new Map<string, Record<GroupCounterName, number>>();
    const perGroup: [GroupCounterName, Counter<'group'>][] = [
      ['delivered', this.#delivered],
      ['acked', this.#acked],
      ['retried', this.#retried],
      ['deadLettered', this.#deadLettered],
      ['released', this.#released],
    ];
    for (const [name, counter] of perGroup) {
      for (const { labels, value } of (await counter.get()).values) {
        const group = String(labels.group);
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
    return {
      topics: [...topics].map(([name, totals]) => ({ name, ...totals })),
      groups: [...groups].map(([name, totals]) => ({ name, ...totals })),
    };
  }

  /** The exposition text for `GET /metrics`. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Per group, its limit and its rate summed over the engines (the queues of a partitioned store). */
function sumRates(
  sources: ReadonlySet<() => Iterable<DeliveryRateGauge>>,
): Map<string, { limit: number; rate: number }> {
  const groups = new Map<string, { limit: number; rate: number }>();
  for (const source of sources) {
    for (const { group, limitPerSecond, ratePerSecond } of source()) {
      const sum = groups.get(group) ?? { limit: limitPerSecond, rate: 0 };
      sum.rate += ratePerSecond;
      groups.set(group, sum);
    }
  }
  return groups;
}

/** Running totals per label value, for a counter prom-client reads when it collects. */
class LabelCounts {
  readonly #totals = new Map<string, number>();

  add(label: string, count: number): void {
    this.#totals.set(label, (this.#totals.get(label) ?? 0) + count);
  }

  entries(): IterableIterator<[string, number]> {
    return this.#totals.entries();
  }
}

/** A prom-client `collect` hook that sets a counter to the totals of `counts`, under `labelName`. */
function collectFrom<TLabel extends string>(
  counts: LabelCounts,
  labelName: TLabel,
): (this: Counter<TLabel>) => void {
  return function (this: Counter<TLabel>) {
    this.reset();
    for (const [label, total] of counts.entries()) {
      this.inc({ [labelName]: label } as Partial<Record<TLabel, string>>, total);
    }
  };
}
