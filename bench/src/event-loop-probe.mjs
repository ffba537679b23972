// Preloaded into the broker process by `pnpm bench` (`node --import ./event-loop-probe.mjs`), so
// the broker itself carries no bench code: an event-loop delay histogram sampled every 1 ms
// (prom-client's, on /metrics, samples every 10 ms, too coarse to see 1 ms stalls). On SIGUSR2 it
// prints one line, `event-loop-delay {…}`, with the delay since the last report, and starts over.
// Beside it, the garbage collector's pauses since the last report, young-generation (scavenges)
// and full, from `perf_hooks`' gc entries: at W3's rate most of the loop's longest stalls are
// scavenges, which the delay alone cannot tell from the broker's own work.
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const RESOLUTION_MS = 1;
const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
histogram.enable();

/** Pauses since the last report, in ms: scavenges, and full (mark-compact) collections. */
let minorPauses = [];
let majorPauses = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minorPauses.push(entry.duration);
    else if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorPauses.push(entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

const pausesOf = (durations) => ({
  count: durations.length,
  totalMs: durations.reduce((sum, ms) => sum + ms, 0),
  maxMs: durations.reduce((max, ms) => Math.max(max, ms), 0),
});

// The histogram records each timer interval whole: what it says beyond the 1 ms asked for is the delay.
const delayMs = (nanoseconds) => Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS);

process.on('SIGUSR2', () => {
  const report = {
    p50Ms: delayMs(histogram.percentile(50)),
    p99Ms: delayMs(histogram.percentile(99)),
    maxMs: delayMs(histogram.max),
    samples: histogram.count,
    gcMinor: pausesOf(minorPauses),
    gcMajor: pausesOf(majorPauses),
  };
  histogram.reset();
  minorPauses = [];
  majorPauses = [];
  process.stdout.write(`event-loop-delay ${JSON.stringify(report)}\n`);
});
