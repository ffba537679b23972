import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, type BrokerConfigInput, buildBroker } from '@ricochet/broker';
import type { Random } from '@ricochet/core';
import type { DeadLetterEntry as DlqEntry } from '@ricochet/protocol';
import { BrokerError, ERROR_CODES } from '@ricochet/protocol';
import {
  type Delivery,
  type DeliveryQuery,
  deliveriesOf,
  describeStanding,
  findDelivery,
  type InflightDelivery,
} from './deliveries.js';
import { Quiescence } from './quiescence.js';
import { SocketActivity } from './socket-activity.js';
import { StoreActivity } from './store-activity.js';
import { TestAdmin } from './test-admin.js';
import { ExpectationError } from './testing-errors.js';
import { ClockDriver, type VirtualClock } from './virtual-clock.js';
import { VirtualTimeline } from './virtual-timeline.js';

/** Options of {@link startTestBroker}. */
export interface StartTestBrokerOptions {
  /**
   * Broker settings, as `ricochet-broker` takes them, except where it listens (always
   * `127.0.0.1`, a free port). The kit's defaults differ from the CLI's in four: `logLevel`
   * `'silent'`, `flushPolicy` `'commit'` (a test needs no fsync), `drainTimeoutMs` 1000, and
   * `deliveryHistory` `'full'` (every success is in the history, for {@link TestBroker.history}).
   * @default {} (a temporary `dataDir`, removed on close)
   */
  readonly config?: Omit<BrokerConfigInput, 'host' | 'port'>;
  /** Where the virtual clock starts, in epoch ms. @default the real time at start */
  readonly startAtMs?: number;
  /** The broker's randomness, e.g. for an exponential retry policy's jitter. @default Math.random */
  readonly random?: Random;
  /**
   * How long, in real ms, the clock's moves and the assertions wait for the broker and its
   * clients to go quiet before they fail with `SettleTimeoutError`. @default 5000 (ms)
   */
  readonly settleTimeoutMs?: number;
}

/** Options of {@link TestBroker.waitForDelivery}. */
export interface WaitForDeliveryOptions {
  /** How long to wait, in real ms, before failing with `ExpectationError`. @default 5000 (ms) */
  readonly timeoutMs?: number;
  /** Stops the wait; it rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * A real broker (the real engine, wire protocol and store) running in this process on a virtual
 * clock, for one test. `await using` closes it and removes its data directory.
 */
export interface TestBroker extends AsyncDisposable {
  /** The endpoint clients take: `ws://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** The admin HTTP API's base URL, `http://127.0.0.1:<port>`, for code that calls it itself. */
  readonly adminUrl: string;
  /** The admin API, typed: topics, groups, DLQs, messages. */
  readonly admin: TestAdmin;
  /** The virtual clock of the broker's scheduler, leases, delays and long polls. */
  readonly clock: VirtualClock;
  /** The broker itself, as `buildBroker` returned it. */
  readonly broker: Broker;
  /** The broker's data directory. */
  readonly dataDir: string;
  /**
   * Resolves once the broker and the clients in this process are quiet: every frame on its way
   * has arrived, the store has committed, and nothing changed for a couple of ms.
   * @throws SettleTimeoutError when that takes longer than `settleTimeoutMs`.
   */
  settle(): Promise<void>;
  /**
   * Wait until the broker has made delivery `attempt` of the message to `group`, and what
   * followed has played out; real time passes, virtual time does not (advance the clock for a
   * retry). Resolves with the delivery: ended (with its virtual times), or still `inflight`.
   * @throws ExpectationError after `timeoutMs`, saying where the message stands.
   */
  waitForDelivery(
    query: DeliveryQuery,
    options?: WaitForDeliveryOptions,
  ): Promise<Delivery | InflightDelivery>;
  /**
   * Once the broker is quiet, assert that the message is in the group's DLQ (`%DLQ%<group>`).
   * @returns its DLQ entry: attempts, last failure reason, origin topic …
   * @throws ExpectationError when it is not, saying where the message stands instead.
   */
  expectInDlq(group: string, messageId: string): Promise<DlqEntry>;
  /**
   * Once the broker is quiet, every delivery of the message that has ended, per group in delivery
   * order, with its virtual times (`elapsedMs` since the message was stored). A delivery a
   * consumer still holds is not in it; `waitForDelivery` reports that one.
   */
  history(messageId: string, options?: { readonly group?: string }): Promise<Delivery[]>;
  /** Close the broker (after a short drain) and remove a data directory the kit made. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_SETTLE_TIMEOUT_MS = 5_000;
const DEFAULT_WAIT_TIMEOUT_MS = 5_000;

/**
 * Start a real broker in this process, listening on 127.0.0.1 on a free port, over a temporary
 * data directory, on a virtual clock.
 *
 * @example
 * await using broker = await startTestBroker();
 * await using consumer = new PushConsumer({ endpoint: broker.endpoint, … , clock: broker.clock });
 * await broker.clock.advance('10s');
 */
export async function startTestBroker(options: StartTestBrokerOptions = {}): Promise<TestBroker> {
  const settleTimeoutMs = options.settleTimeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS;
  if (!(Number.isInteger(settleTimeoutMs) && settleTimeoutMs > 0))
    throw new RangeError(`settleTimeoutMs must be a positive integer, got ${settleTimeoutMs}`);
  const ownDataDir = options.config?.dataDir === undefined;
  const dataDir = options.config?.dataDir ?? mkdtempSync(join(tmpdir(), 'ricochet-testing-'));
  const timeline = new VirtualTimeline(options.startAtMs ?? Date.now());
  const store = new StoreActivity();
  let broker: Broker | undefined;
  let sockets: SocketActivity | undefined;
  try {
    broker = await buildBroker(
      {
        logLevel: 'silent',
        flushPolicy: 'commit',
        drainTimeoutMs: 1_000,
        // A test wants to see every delivery, successes too (`history()`, `waitForDelivery`).
        deliveryHistory: 'full',
        ...options.config,
        host: '127.0.0.1',
        port: 0,
        dataDir,
      },
      {
        clock: timeline,
        timers: timeline.timers('broker'),
        ...(options.random === undefined ? {} : { random: options.random }),
        wrapStore: (opened) => store.wrap(opened),
      },
    );
    // What the broker armed while starting is its periodic upkeep; `runUntilIdle` does not wait for it.
    timeline.markHousekeepingFrom(0);
    sockets = new SocketActivity(broker.app.server);
    const { port } = await broker.listen();
    sockets.listening(port);
    const quiescence = new Quiescence({ sockets, store, timeline, settleTimeoutMs });
    return new KitBroker({
      broker,
      port,
      dataDir,
      ownDataDir,
      timeline,
      sockets,
      quiescence,
      clock: new ClockDriver(timeline, quiescence),
    });
  } catch (error) {
    sockets?.close();
    timeline.close();
    await broker?.close();
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

interface KitBrokerParts {
  readonly broker: Broker;
  readonly port: number;
  readonly dataDir: string;
  readonly ownDataDir: boolean;
  readonly timeline: VirtualTimeline;
  readonly sockets: SocketActivity;
  readonly quiescence: Quiescence;
  readonly clock: ClockDriver;
}

class KitBroker implements TestBroker {
  readonly endpoint: string;
  readonly adminUrl: string;
  readonly admin: TestAdmin;
  readonly broker: Broker;
  readonly dataDir: string;
  readonly #parts: KitBrokerParts;
  #closing: Promise<void> | undefined;

  constructor(parts: KitBrokerParts) {
    this.#parts = parts;
    this.broker = parts.broker;
    this.dataDir = parts.dataDir;
    this.endpoint = `ws://127.0.0.1:${parts.port}`;
    this.adminUrl = `http://127.0.0.1:${parts.port}`;
    this.admin = new TestAdmin(parts.broker);
  }

  get clock(): VirtualClock {
    return this.#parts.clock;
  }

  settle(): Promise<void> {
    return this.#parts.quiescence.settle();
  }

  async waitForDelivery(
    query: DeliveryQuery,
    options: WaitForDeliveryOptions = {},
  ): Promise<Delivery | InflightDelivery> {
    const attempt = query.attempt ?? 1;
    if (!(Number.isInteger(attempt) && attempt >= 1))
      throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    const { quiescence, clock } = this.#parts;
    await clock.idle();
    const deadline = performance.now() + timeoutMs;
    // Bounded by the deadline: each round waits for a change, or for a recheck interval.
    for (;;) {
      options.signal?.throwIfAborted();
      await quiescence.settle();
      const since = quiescence.mark();
      const view = await this.admin.getMessage(query.messageId);
      const found = view && findDelivery(view, query.group, attempt);
      if (found) return found;
      if (performance.now() >= deadline) {
        const standing = describeStanding(view, query.group, clock.now());
        throw new ExpectationError(
          `delivery ${attempt} of message ${query.messageId} to group '${query.group}' was not made within ${timeoutMs} ms of real time: ${standing}`,
        );
      }
      await quiescence.nextChange(since, deadline);
    }
  }

  async expectInDlq(group: string, messageId: string): Promise<DlqEntry> {
    await this.#parts.clock.idle();
    await this.settle();
    const entry = (await this.#dlqOf(group)).find((candidate) => candidate.messageId === messageId);
    if (entry) return entry;
    const standing = describeStanding(await this.admin.getMessage(messageId), group, this.clock.now());
    throw new ExpectationError(`message ${messageId} is not in the DLQ of group '${group}': ${standing}`);
  }

  /** The group's DLQ; empty when the group does not exist. */
  async #dlqOf(group: string): Promise<DlqEntry[]> {
    try {
      return await this.admin.listDlq(group);
    } catch (error) {
      if (error instanceof BrokerError && error.code === ERROR_CODES.NOT_FOUND.code) return [];
      throw error;
    }
  }

  async history(messageId: string, options: { readonly group?: string } = {}): Promise<Delivery[]> {
    await this.#parts.clock.idle();
    await this.settle();
    const view = await this.admin.getMessage(messageId);
    return view === undefined ? [] : deliveriesOf(view, options.group);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #close(): Promise<void> {
    const { broker, sockets, timeline, dataDir, ownDataDir } = this.#parts;
    try {
      await broker.close();
    } finally {
      sockets.close();
      timeline.close();
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
