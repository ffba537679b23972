import { describe, expect, it } from 'vitest';
import { BrokerMetrics, type GroupGaugeSource } from './broker-metrics.js';

/** The metric names of a Prometheus text exposition. */
function metricNames(exposition: string): string[] {
  return exposition
    .split('\n')
    .filter((line) => line.startsWith('# TYPE '))
    .map((line) => line.split(' ')[2] ?? '');
}

describe('BrokerMetrics', () => {
  it('exports every metric under the one prefix, Node process metrics by their usual names', async () => {
    const metrics = new BrokerMetrics({ groupGauges: () => [] });
    const names = metricNames(await metrics.registry.metrics());
    expect(names.filter((name) => !name.startsWith('ricochet_'))).toEqual([]);
    expect(names.filter((name) => name.includes('process_process_'))).toEqual([]);
    expect(names).toContain('ricochet_process_cpu_seconds_total');
    expect(names).toContain('ricochet_nodejs_heap_size_used_bytes');
    expect(names).toContain('ricochet_messages_sent_total');
  });

  it('names no gauge or histogram `_total`, which Prometheus keeps for counters', async () => {
    const metrics = new BrokerMetrics({ groupGauges: () => [] });
    const types = (await metrics.registry.metrics())
      .split('\n')
      .filter((line) => line.startsWith('# TYPE '))
      .map((line) => line.split(' ').slice(2));
    expect(types.filter(([name, type]) => type !== 'counter' && name?.endsWith('_total'))).toEqual([]);
    expect(types.map(([name]) => name)).toContain('ricochet_nodejs_active_handles');
  });

  it('renders what prom-client renders, every labelled family written from its own series', async () => {
    const metrics = populated(['a', 'b"quoted\\', 'c\nline']);
    const own = (text: string) =>
      text.split('\n').filter((line) => !/^(# (HELP|TYPE) )?ricochet_(process|nodejs)_/.test(line));
    expect(own(await metrics.render())).toEqual(own(await metrics.registry.metrics()));
    expect(await metrics.render()).toContain(
      'ricochet_group_paused{group="b\\"quoted\\\\",reason="manual"} 1\n',
    );
    expect(await metrics.counterTotals()).toEqual({
      topics: [
        { name: 't-a', sent: 3 },
        { name: 't-b"quoted\\', sent: 3 },
        { name: 't-c\nline', sent: 3 },
      ],
      groups: ['a', 'b"quoted\\', 'c\nline'].map((name) => ({
        name,
        delivered: 2,
        acked: 1,
        retried: 1,
        deadLettered: 1,
        released: 1,
      })),
    });
  });

  it('lets the event loop turn while it renders many groups, and reads each group once per scrape', async () => {
    const groups = Array.from({ length: 2_000 }, (_, index) => `tenant-${index}`);
    let reads = 0;
    const source: GroupGaugeSource = {
      *groupGauges() {
        for (const group of groups) {
          reads++;
          yield { group, inflight: 1, backlog: 2 };
        }
      },
    };
    // A clock that moves 1 ms at each look: every look after the first ends a slice of 1 ms.
    let nowMs = 0;
    const metrics = new BrokerMetrics(source, { sliceMs: 1, now: () => nowMs++ });
    for (const group of groups) metrics.delivered(group);
    let rendered = false;
    const rendering = metrics.render().then((text) => {
      rendered = true;
      return text;
    });
    // Another client's request, answered on the next turn of the loop: before the scrape ends.
    await new Promise((resolve) => setImmediate(resolve));
    expect(rendered).toBe(false);
    const text = await rendering;
    expect(reads).toBe(groups.length);
    expect(text).toContain('ricochet_group_backlog_messages{group="tenant-1999"} 2\n');
    expect(text.match(/^ricochet_group_inflight_messages\{/gm)).toHaveLength(groups.length);
    // Two scrapes at once share one render.
    reads = 0;
    const [first, second] = await Promise.all([metrics.render(), metrics.render()]);
    expect(second).toBe(first);
    expect(reads).toBe(groups.length);
  });

  it('writes a scrape in one turn when the slice has time left (a broker of a few groups)', async () => {
    const metrics = new BrokerMetrics(
      { groupGauges: () => [{ group: 'g', inflight: 0, backlog: 0 }] },
      {
        sliceMs: Number.POSITIVE_INFINITY,
        nextTurn: () => Promise.reject(new Error('the render waited for a turn')),
      },
    );
    metrics.delivered('g');
    expect(await metrics.render()).toContain('ricochet_messages_delivered_total{group="g"} 1\n');
  });
});

/** Metrics with a series in every labelled family, for each of `groups` (label values to escape included). */
function populated(groups: readonly string[]): BrokerMetrics {
  const metrics = new BrokerMetrics({
    groupGauges: () => groups.map((group, index) => ({ group, inflight: index, backlog: index * 10 })),
  });
  metrics.addDeliveryRates(() => groups.map((group) => ({ group, limitPerSecond: 100, ratePerSecond: 1.5 })));
  metrics.addDeliveryRates(() => groups.map((group) => ({ group, limitPerSecond: 100, ratePerSecond: 2 })));
  for (const group of groups) {
    metrics.messagesSent(`t-${group}`, 3);
    metrics.delivered(group, 2);
    metrics.acked(group);
    metrics.retried(group);
    metrics.deadLettered(group);
    metrics.released(group);
    metrics.broadcastFailed(group);
    metrics.groupPaused(group, 'manual', true);
    metrics.groupPaused(group, 'failures', false);
    metrics.breakerTransitioned(group, 'closed', 'open');
    metrics.deliveriesHeld(group, 'rate');
    metrics.messagesExpired(group, 4);
    metrics.retentionDeleted(`t-${group}`, 5);
  }
  metrics.rejected(429);
  metrics.sendLatency(0.002);
  return metrics;
}
