import { BrokerError } from '@ricochet/protocol';
import type { BrokerStore } from '../broker-store.js';
import type { Sql } from './driver.js';
import { isFenced, type StoreLease } from './store-lease.js';
import { type FollowedWrites, WriteBatch } from './write-batch.js';

/**
 * Writes past which a batch gathering behind a transaction in flight is closed at the end of its
 * turn, the next turns' writes going into another: a transaction of tens of thousands of rows took
 * its 20–30 ms event-loop task to encode and bind, and as long to replay. A single turn's writes
 * are never split (the seam's rule 2), so one turn may still make a larger batch.
 */
export const MAX_BATCH_WRITES = 2_048;

/** One transaction's writes and the promise every one of them returns. */
export interface QueuedBatch {
  readonly writes: WriteBatch;
  readonly done: Promise<void>;
  /** Set once `done` settled: a batch given up while its transaction hung is not failed twice. */
  settled: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

/** What {@link WritePipeline} works with. */
export interface WritePipelineParts {
  /** The one connection every write transaction goes through. */
  readonly writer: Sql;
  readonly lease: StoreLease;
  /** The local copy each committed batch is replayed on. */
  readonly mirror: BrokerStore;
  /** Filled by the local copy's write-error hook. */
  readonly localFailures: readonly unknown[];
  /** How long a failed transaction is sent again before the store gives up. */
  readonly writeRetryMs: number;
  readonly onWriteError?: (error: unknown) => void;
  readonly onLost?: (error: unknown) => void;
  /** The database's fence refused a transaction of this broker (a write or a renewal): another took the lease. */
  readonly onFenced?: () => void;
  /**
   * The highest `seq` the followed tables held when this broker took the store (`WarmCopy.rowSeq`):
   * where the positions of the batches it commits start.
   */
  readonly rowSeq: number;
  /**
   * The feed to the standbys (`standby-feed.ts`): while it is `wanted`, each batch once committed
   * is published, in commit order, with what it wrote of the tables a standby follows and its
   * position, the highest `seq` before it (`from`) and after it (`to`).
   */
  readonly feed?: { wanted(): boolean; publish(committed: CommittedWrites): void };
}

/** A committed batch's writes to the followed tables, between two positions (see `WarmCopy.apply`). */
export interface CommittedWrites extends FollowedWrites {
  /** The highest `seq` of the followed tables before this batch committed. */
  readonly from: number;
  /** The highest after it: `from` when it numbered no row. */
  readonly to: number;
}

/**
 * The PostgreSQL store's writes, from the turn's batch to its commit: writes gather per event turn
 * into one transaction (one statement when it can be, `WriteBatch.fencedStatement`) on a single
 * connection, so transactions commit in queue order (the seam's
 * rules 2 and 3); while one is in flight, later turns' writes gather into the next (group commit).
 * Every transaction is fenced by the lease, which a heartbeat also renews while none is in flight.
 * Once PostgreSQL acknowledged a `COMMIT`, the batch is replayed on the local copy, and only then
 * do its write promises resolve (rule 4). When the store is lost (fenced, unreachable, stuck),
 * every write from then on fails.
 */
export class WritePipeline {
  readonly #parts: WritePipelineParts;
  readonly #heartbeat: NodeJS.Timeout;
  /** The batch gathering this turn's writes, not yet sent. */
  #gathering: QueuedBatch | undefined;
  /** The batch whose transaction is in flight. */
  #inFlight: QueuedBatch | undefined;
  /** The last batch queued, sent or not: what {@link committed} waits for. */
  #last: Promise<void> = Promise.resolve();
  #turnEndPlanned = false;
  /** Batches closed and waiting for the transaction in flight, oldest first. */
  readonly #closed: QueuedBatch[] = [];
  /** When the last renewal that succeeded was sent (a write transaction renews too). */
  #renewedAt = Date.now();
  /** A heartbeat query is out. */
  #renewing = false;
  /** Once given up: the failed batch every later write joins. */
  #refused: QueuedBatch | undefined;
  #failedWrites = 0;
  /** Set once the store gave up: every later write fails with it. */
  #lost: unknown;
  #stopped = false;
  /** The highest `seq` of the followed tables committed: the position of the last batch. */
  #rowSeq: number;

  constructor(parts: WritePipelineParts) {
    this.#parts = parts;
    this.#rowSeq = parts.rowSeq;
    this.#heartbeat = setInterval(() => this.#renew(), Math.max(10, Math.floor(parts.lease.ttlMs / 3)));
    this.#heartbeat.unref();
  }

  /** Why the store gave up, or `undefined` while it takes writes. */
  get lost(): unknown {
    return this.#lost;
  }

  /** The batch of this turn: the one gathering, or a new one; either way its turn's end is planned. */
  batch(): QueuedBatch {
    if (this.#gathering) {
      this.#planTurnEnd();
      return this.#gathering;
    }
    // Given up: every write fails at once, all on one failed batch (reported once).
    if (this.#lost !== undefined) {
      this.#refused ??= this.#failedBatch(this.#lost);
      return this.#refused;
    }
    const batch = newBatch();
    this.#gathering = batch;
    this.#last = batch.done;
    this.#planTurnEnd();
    return batch;
  }

  /** Resolves when every batch queued before the call has settled. */
  committed(): Promise<void> {
    return this.#last.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Resolves when every batch queued before the call committed; rejects if one failed, or the store is lost. */
  async durable(): Promise<void> {
    const failedBefore = this.#failedWrites;
    await this.committed();
    // A store that gave up promises nothing any more, even with nothing queued. Its lease was taken
    // or ran out, or the database stayed unreachable: this broker cannot serve the store now, and
    // a client should try again (another broker, or this one once it owns the store again).
    if (this.#lost !== undefined) {
      throw BrokerError.of('BROKER_UNAVAILABLE', `the store stopped taking writes: ${reasonOf(this.#lost)}`);
    }
    if (this.#failedWrites !== failedBefore) throw new Error('a write in this commit failed');
  }

  /** Stop the heartbeat; what is queued still commits (await {@link committed}). */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#heartbeat);
  }

  #failedBatch(error: unknown): QueuedBatch {
    const batch = newBatch();
    this.#fail(batch, error);
    return batch;
  }

  /**
   * At the end of the turn (a `setImmediate`, as lmdb-js does; never a promise callback, which
   * could split one turn's writes across two transactions), the gathering batch is closed when no
   * transaction is in flight, or when it holds {@link MAX_BATCH_WRITES} writes; closed batches are
   * sent one after another. Otherwise the next turn's writes join it (group commit).
   */
  #planTurnEnd(): void {
    if (this.#turnEndPlanned) return;
    this.#turnEndPlanned = true;
    setImmediate(() => {
      this.#turnEndPlanned = false;
      const batch = this.#gathering;
      if (batch && (!this.#inFlight || batch.writes.size >= MAX_BATCH_WRITES)) {
        this.#gathering = undefined;
        this.#closed.push(batch);
      }
      this.#sendNext();
    });
  }

  /** Send the oldest closed batch, unless a transaction is in flight (its end sends the next). */
  #sendNext(): void {
    const batch = this.#inFlight ? undefined : this.#closed.shift();
    if (!batch) return;
    this.#inFlight = batch;
    // A throw past the transaction (a replay on the local copy that threw, its environment closed)
    // loses the store as a failed local write does: left alone it would keep the batch pending
    // for ever, and its rejection, unhandled, would end the process.
    void this.#send(batch)
      .catch((error: unknown) => this.#loseStore(batch, error))
      .finally(() => {
        this.#inFlight = undefined;
        if (this.#closed.length > 0) this.#sendNext();
        else if (this.#gathering) this.#planTurnEnd();
      });
  }

  async #send(batch: QueuedBatch): Promise<void> {
    if (this.#lost !== undefined) return this.#fail(batch, this.#lost);
    const { writer, lease, mirror, localFailures, writeRetryMs } = this.#parts;
    const startedAt = Date.now();
    let highestSeq: number | undefined;
    // Bounded by writeRetryMs: each attempt either commits, is fenced, or waits before the next.
    for (let attempt = 0; ; attempt++) {
      try {
        const sentAt = Date.now();
        const statement = batch.writes.fencedStatement(lease.fenceCall());
        const answers = statement
          ? [await writer.unsafe(statement.text, statement.parameters, { prepare: true })]
          : await writer.begin((tx) => [lease.fence(tx), ...batch.writes.statements(tx)]);
        highestSeq = highestSeqIn(answers);
        this.#renewedAt = sentAt;
        break;
      } catch (error) {
        // The batch is idempotent (upserts and deletes), so a transaction whose fate is unknown
        // (the connection dropped around its COMMIT) may be sent again; later batches wait. Not
        // once the store is lost (the heartbeat found the lease run out meanwhile): it has failed
        // already, and retrying would only keep the queue from being handed on.
        // Counted even when the store was lost already: a transaction that hung through a
        // partition and reaches the database after a takeover is refused here, late.
        if (isFenced(error)) this.#parts.onFenced?.();
        if (isFenced(error) || this.#lost !== undefined || Date.now() - startedAt >= writeRetryMs)
          return this.#loseStore(batch, error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** attempt)));
      }
    }
    // In commit order: the next batch is sent only once this one settled.
    const from = this.#rowSeq;
    if (highestSeq !== undefined && highestSeq > from) this.#rowSeq = highestSeq;
    const feed = this.#parts.feed;
    if (feed?.wanted()) feed.publish({ ...batch.writes.followedWrites(), from, to: this.#rowSeq });
    await batch.writes.applyTo(mirror);
    await mirror.committed();
    // The local copy no longer matches what committed: reads could miss what the engine dropped
    // from memory on this resolve. Safer to stop writing than to serve from it.
    const localFailure = localFailures[0];
    if (localFailure !== undefined) return this.#loseStore(batch, localFailure);
    batch.resolve();
  }

  /** Give up: this batch and every later write fail, since a later commit could refer to what this one lost. */
  #loseStore(batch: QueuedBatch, error: unknown): void {
    this.#giveUp(error);
    this.#fail(batch, error);
  }

  #fail(batch: QueuedBatch, error: unknown): void {
    if (batch.settled) return;
    this.#failedWrites++;
    this.#parts.onWriteError?.(error);
    batch.reject(error);
  }

  /**
   * The heartbeat: renew the lease while no transaction does (one query at a time), and hold the
   * liveness lock (taken back if its session ended; see `liveness-lock.ts`). Fenced, the
   * store is lost. Not renewed for longer than the lease, whether the renewals fail (the database
   * unreachable) or hang (a half-open connection, a lock), it is lost too: a standby may own the
   * store by now, and an idle or stuck broker would otherwise go on serving from memory unaware.
   * A transaction in flight then fails with everything after it; had it committed after all, it
   * did so before any takeover (the fence's row lock), and a send answered with an error is only
   * sent again.
   */
  #renew(): void {
    if (this.#lost !== undefined || this.#stopped) return;
    const { lease, writer } = this.#parts;
    void lease.keepLive();
    if (Date.now() - this.#renewedAt > lease.ttlMs) {
      const error = new Error('the store lease could not be renewed within its time');
      if (this.#inFlight) this.#loseStore(this.#inFlight, error);
      else this.#giveUp(error);
      return;
    }
    if (this.#inFlight || this.#renewing) return;
    this.#renewing = true;
    const sentAt = Date.now();
    lease
      .fence(writer)
      .then(
        () => {
          this.#renewedAt = Math.max(this.#renewedAt, sentAt);
        },
        (error: unknown) => {
          if (!isFenced(error)) return;
          this.#parts.onFenced?.();
          this.#giveUp(error);
        },
      )
      .finally(() => {
        this.#renewing = false;
      });
  }

  /** Stop taking writes for good, and say so once. */
  #giveUp(error: unknown): void {
    if (this.#lost !== undefined) return;
    this.#lost = error;
    // Writes waiting behind a transaction that hangs would wait for it: they fail now too.
    for (const batch of this.#closed.splice(0)) this.#fail(batch, error);
    const gathering = this.#gathering;
    this.#gathering = undefined;
    if (gathering) this.#fail(gathering, error);
    this.#parts.onLost?.(error);
  }
}

/** A batch with its promise; a failure is counted and reported once, by the pipeline. */
function newBatch(): QueuedBatch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // The engine may ignore the promise.
  done.catch(() => {});
  const batch: QueuedBatch = {
    writes: new WriteBatch(),
    done,
    settled: false,
    resolve: () => {
      batch.settled = true;
      resolve();
    },
    reject: (error) => {
      batch.settled = true;
      reject(error);
    },
  };
  return batch;
}

/**
 * The highest `seq` the statements' answers name: the batch's one statement answers it in its
 * `seq` column, a transaction in the answer of each numbered upsert (`write-batch.ts`). `undefined`
 * when the batch numbered no row.
 */
function highestSeqIn(answers: readonly unknown[]): number | undefined {
  let highest: number | undefined;
  for (const answer of answers) {
    if (!Array.isArray(answer)) continue;
    for (const row of answer as { seq?: unknown }[]) {
      if (typeof row?.seq !== 'string') continue;
      const seq = Number(row.seq);
      if (highest === undefined || seq > highest) highest = seq;
    }
  }
  return highest;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
