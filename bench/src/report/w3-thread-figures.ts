import type { BrokerLoopReading } from '../processes.js';
import type { RunQueueReading } from '../run-queue.js';
import type { Outcome } from './side-by-side.js';

/**
 * The figures of W3's rows about the threads beneath the latency: the broker's collector pauses
 * (from its event-loop probe) and how long the main threads waited for a core (`run-queue.ts`).
 */

/** The GC row's figures of a broker's event-loop reading. */
export function gcOutcome({ gcMinor, gcMajor }: BrokerLoopReading): Outcome {
  return {
    figures: {
      minorCount: gcMinor.count,
      minorMaxMs: gcMinor.maxMs,
      majorCount: gcMajor.count,
      majorMaxMs: gcMajor.maxMs,
    },
  };
}

/** The run-queue row's figures of a W3 window, or why it has none (a machine without Linux's schedstat). */
export function runQueueOutcome({ server, client }: RunQueueReading): Outcome {
  if (server === undefined || client === undefined) {
    return { notApplicable: 'no /proc/<pid>/schedstat on this machine' };
  }
  return {
    figures: {
      serverWaitMsPerS: server.waitMsPerS,
      serverWaitUsPerSlice: server.waitUsPerSlice,
      clientWaitMsPerS: client.waitMsPerS,
      clientWaitUsPerSlice: client.waitUsPerSlice,
    },
  };
}
