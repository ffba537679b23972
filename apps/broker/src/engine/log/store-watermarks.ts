import { BrokerError } from '@ricochet/protocol';
import type { BrokerConfig } from '../../config.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import { systemTimers, type TimerHandle, type TimerService } from '../timers/timer-service.js';

/** The limits sends are refused beyond (DESIGN.md §5). */
export interface WatermarkLimits {
  /** Sends are refused while the data directory's file system has less free space than this. */
  readonly minFreeDiskBytes: number;
  /** Sends are refused while the store's data takes more than this; absent: no limit. */
  readonly maxStoreBytes?: number | undefined;
}

export interface StoreWatermarksDeps {
  readonly limits: WatermarkLimits;
  /** Real timers, not a test's virtual clock: free disk space is a fact of the machine. */
  readonly timers: TimerService;
  readonly metrics: BrokerMetrics;
  /** How often the levels are read. */
  readonly intervalMs: number;
  /** Free bytes on the data directory's file system (for the broker's user); `undefined` if unknown. */
  readonly freeDiskBytes: () => Promise<number | undefined>;
  /**
   * Bytes the store's data takes up (`BrokerStore.storedBytes`); with queues spread over brokers,
   * every queue's, some asked of their owners.
   */
  readonly storedBytes: () => number | Promise<number>;
  /** One line per change: sends refused (with why) or accepted again. */
  readonly onChange: (refused: boolean, reason: string) => void;
  readonly onError: (error: unknown) => void;
}

/**
 * Disk and store watermarks: sends are answered with `530 TOO_MANY_REQUESTS` while the disk is
 * nearly full or the store is over its size limit, and accepted again once back within bounds.
 * Consumption, acks, retries and DLQ copies go on meanwhile: they free space (a commit deletes a
 * record; retention deletes expired messages), which is how a backlog drains.
 *
 * The levels are read every `intervalMs` (a `statfs` and a few page counters), never per send: a
 * send only reads the verdict of the last check.
 */
export class StoreWatermarks {
  readonly #deps: StoreWatermarksDeps;
  #refusal: BrokerError | undefined;
  #timer: TimerHandle | undefined;
  /** The last check asked for (settled once every check has ended). */
  #latest: Promise<void> = Promise.resolve();
  /** A check asked for that has not started reading the levels yet. */
  #queued: Promise<void> | undefined;
  #stopped = false;

  constructor(deps: StoreWatermarksDeps) {
    this.#deps = deps;
  }

  /** The error to refuse a send with, or `undefined` while within bounds. */
  refusal(): BrokerError | undefined {
    return this.#refusal;
  }

  /** Check now and every `intervalMs` from now on. */
  async start(): Promise<void> {
    await this.check();
    this.#arm();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#latest.catch(() => undefined);
  }

  /**
   * Read the levels now and update the verdict (tests await it instead of the next tick).
   *
   * The levels are read after the call. A check already under way may have read them before
   * whatever the caller just did (a retention pass, acks), so the call gets the next check, which
   * starts when that one ends and which every call made before it starts shares. Checks run one
   * at a time, so an older reading never overwrites a newer verdict.
   */
  check(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    const queued: Promise<void> = this.#latest
      .catch(() => undefined)
      .then(() => {
        // From here on the levels are being read: a later call needs a check of its own.
        if (this.#queued === queued) this.#queued = undefined;
        return this.#check();
      });
    this.#queued = queued;
    this.#latest = queued;
    return queued;
  }

  async #check(): Promise<void> {
    const { limits } = this.#deps;
    const freeBytes = await this.#deps.freeDiskBytes();
    const lowDisk = freeBytes !== undefined && freeBytes < limits.minFreeDiskBytes;
    const storeBytes = await this.#deps.storedBytes();
    this.#deps.metrics.storeLevels(storeBytes, freeBytes);
    const overStore = limits.maxStoreBytes !== undefined && storeBytes > limits.maxStoreBytes;
    this.#deps.metrics.watermarkExceeded('min_free_disk', lowDisk);
    this.#deps.metrics.watermarkExceeded('max_store', overStore);
    const reason = lowDisk
      ? `the disk of the data directory has ${freeBytes} bytes free; sends need at least ${limits.minFreeDiskBytes} (--min-free-disk-bytes)`
      : overStore
        ? `the store holds ${storeBytes} bytes; its limit is ${limits.maxStoreBytes} (--max-store-bytes)`
        : undefined;
    const wasRefusing = this.#refusal !== undefined;
    this.#refusal =
      reason === undefined
        ? undefined
        : BrokerError.of('TOO_MANY_REQUESTS', `sends are paused: ${reason}`, {
            watermark: lowDisk ? 'minFreeDiskBytes' : 'maxStoreBytes',
          });
    if (wasRefusing !== (reason !== undefined))
      this.#deps.onChange(reason !== undefined, reason ?? 'the store is back within its watermarks');
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = this.#deps.timers.setTimer(this.#deps.intervalMs, () => {
      this.#arm();
      this.check().catch((error: unknown) => this.#deps.onError(error));
    });
  }
}

/** The broker's watermarks, from its config; checked on real time, whatever the engine's clock. */
export function watermarksFor(
  config: Pick<BrokerConfig, 'minFreeDiskBytes' | 'maxStoreBytes' | 'watermarkCheckIntervalMs'>,
  deps: Pick<StoreWatermarksDeps, 'metrics' | 'storedBytes' | 'freeDiskBytes' | 'onError'> & {
    readonly onNotice: (message: string) => void;
  },
): StoreWatermarks {
  return new StoreWatermarks({
    ...deps,
    limits: { minFreeDiskBytes: config.minFreeDiskBytes, maxStoreBytes: config.maxStoreBytes },
    timers: systemTimers,
    intervalMs: config.watermarkCheckIntervalMs,
    onChange: (refused, reason) =>
      deps.onNotice(refused ? `sends refused: ${reason}` : `sends accepted again: ${reason}`),
  });
}
