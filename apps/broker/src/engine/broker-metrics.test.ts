import { describe, expect, it } from 'vitest';
import { BrokerMetrics } from './broker-metrics.js';

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
});
