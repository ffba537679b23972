import type { MeasuredWindow } from '../measured-window.js';

/**
 * Messages the brokers at `endpoints` forwarded for their clients, summed over them (each counts
 * what it forwarded itself, `ricochet_cluster_forwarded_messages_total`): for a client's sends to
 * the queues' owners (`send`), or for deliveries from them (`deliver`). What clients that talk to
 * the owners save; read before and after a workload, the difference is that workload's share.
 */
export async function forwardedMessages(
  endpoints: readonly string[],
  request: 'send' | 'deliver',
): Promise<number> {
  const series = `ricochet_cluster_forwarded_messages_total{request="${request}"} `;
  const counts = await Promise.all(
    endpoints.map(async (endpoint) => {
      const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/metrics`);
      if (!response.ok) throw new Error(`GET /metrics of ${endpoint}: ${response.status}`);
      const line = (await response.text()).split('\n').find((l) => l.startsWith(series));
      return line === undefined ? 0 : Number(line.slice(series.length));
    }),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * `window`, also counting the messages forwarded for `request` between its begin and its end: read
 * just outside the CPU window, so the scrapes' own cost is not measured as the workload's.
 */
export function forwardedOver(
  window: MeasuredWindow,
  endpoints: readonly string[],
  request: 'send' | 'deliver',
): { readonly window: MeasuredWindow; forwarded(): number } {
  let before = 0;
  let after = 0;
  return {
    window: {
      async begin(broker) {
        before = await forwardedMessages(endpoints, request);
        await window.begin(broker);
      },
      async end(broker) {
        await window.end(broker);
        after = await forwardedMessages(endpoints, request);
      },
    },
    forwarded: () => after - before,
  };
}
