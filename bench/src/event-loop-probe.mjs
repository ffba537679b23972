// Preloaded into the broker process by `pnpm bench` (`node --import ./event-loop-probe.mjs`), so
// the broker itself carries no bench code: an event-loop delay histogram sampled every 1 ms
// (prom-client's, on /metrics, samples every 10 ms, too coarse to see 1 ms stalls). On SIGUSR2 it
// prints one line, `event-loop-delay {…}`, with the delay since the last report, and starts over.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const RESOLUTION_MS = 1;
const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
histogram.enable();

// The histogram records each timer interval whole: what it says beyond the 1 ms asked for is the delay.
const delayMs = (nanoseconds) => Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS);

process.on('SIGUSR2', () => {
  const report = {
    p50Ms: delayMs(histogram.percentile(50)),
    p99Ms: delayMs(histogram.percentile(99)),
    maxMs: delayMs(histogram.max),
    samples: histogram.count,
  };
  histogram.reset();
  process.stdout.write(`event-loop-delay ${JSON.stringify(report)}\n`);
});
