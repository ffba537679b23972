import type { TestBroker } from './test-broker.js';

/**
 * A counter's value over every broker of the test: the line of `/metrics` starting with
 * `series` (its name and labels), summed. With queues spread each broker counts what it did
 * itself (the queues it owns, the clients it serves), so the cluster's count is the sum, as a
 * Prometheus `sum()` over every broker's scrape gives it; with one broker, that broker's.
 */
export async function clusterCounter(
  broker: Pick<TestBroker, 'everyAdmin'>,
  series: string,
): Promise<number> {
  let sum = 0;
  for (const admin of broker.everyAdmin) {
    const metrics = await (await admin.fetch('GET', '/metrics')).text();
    const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
    sum += line ? Number(line.split(' ').at(-1)) : 0;
  }
  return sum;
}
