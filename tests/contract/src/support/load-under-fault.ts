import type { Producer } from '@ricochet/producer';
import { ConsumeResult } from '@ricochet/push-consumer';
import postgres from 'postgres';
import { expect } from 'vitest';
import { AdminApi } from './admin.js';
import type { ChildBroker } from './child-broker.js';
import { startProducer, text } from './clients.js';
import { eventually, startRecordingConsumer } from './push.js';
import { QUEUES } from './spread-cluster.js';

/**
 * The load a spread cluster runs under while a fault is made, and the checks that end each case:
 * the partition cases (issue 33 item 2) and the database's own failover (issue 42 item 5). A
 * producer sending steadily, a probe that retries nothing (so each `503` is seen), a push group
 * that acks everything and one that fails some deliveries once and some for good; then, from the
 * database itself, 0 lost, 0 stored twice, each group's committed (and DLQ) equal to what was
 * stored, and the fence records (`ricochet_lease_takes`) agreeing with each queue's lease.
 */
const SENDERS = 8;
/** The most messages a case sends: the load is bounded in count as well as in time. */
const MAX_MESSAGES = 20_000;

export const httpOf = (broker: ChildBroker) => broker.endpoint.replace(/^ws/, 'http');
export const adminOf = (broker: ChildBroker) => new AdminApi(httpOf(broker));

/** The sum over `brokers` of one series of `/metrics` (its name and labels, as printed). */
export async function metric(brokers: readonly ChildBroker[], series: string): Promise<number> {
  let sum = 0;
  for (const broker of brokers) {
    const lines = await (await fetch(`${httpOf(broker)}/metrics`)).text();
    const line = lines.split('\n').find((l) => l.startsWith(`${series} `));
    sum += line ? Number(line.split(' ').at(-1)) : 0;
  }
  return sum;
}

/** The steady load of a case, and what it saw. */
export interface Load {
  readonly topic: string;
  readonly acknowledged: Set<string>;
  readonly failed: string[];
  longestSendMs: number;
  sent: number;
  /** Each acknowledged send's start and answer (`performance.now()`), in the order answered. */
  readonly answered: { readonly sentAtMs: number; readonly answeredAtMs: number }[];
  /** The probe: a send every 20 ms with retries off, so each `503` is seen; `[ms since start, outcome]`. */
  readonly probes: { readonly atMs: number; readonly outcome: string }[];
  stop(): Promise<void>;
}

const body = (topic: string, n: number) => `${topic}#${n}#`;
/** Fails for good (into the DLQ after 3 deliveries): one in ten. */
const poison = (n: number) => n % 10 === 7;

/** A started load: its record, its two consumers, and when it started (`performance.now()`). */
export type LoadRun = Awaited<ReturnType<typeof startLoad>>;

export async function startLoad(
  topic: string,
  producerAt: ChildBroker,
  probeAt: ChildBroker,
  consumersAt: ChildBroker,
) {
  const admin = adminOf(consumersAt);
  await admin.putGroup(`acks-${topic}`, { startFrom: 'earliest' });
  await admin.putGroup(`retries-${topic}`, {
    startFrom: 'earliest',
    maxRetries: 2,
    retryPolicy: { type: 'fixed', delayMs: 20 },
  });
  const acks = await startRecordingConsumer(
    consumersAt.endpoint,
    { group: `acks-${topic}`, subscriptions: { [topic]: '*' } },
    () => ConsumeResult.SUCCESS,
  );
  const retries = await startRecordingConsumer(
    consumersAt.endpoint,
    { group: `retries-${topic}`, subscriptions: { [topic]: '*' } },
    (message) => {
      const n = Number(text(message.body).split('#')[1]);
      if (poison(n)) return ConsumeResult.FAILURE;
      // One in three fails its first delivery and succeeds on the retry.
      return n % 3 === 0 && message.deliveryAttempt === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
    },
  );
  const producer = await startProducer(producerAt.endpoint);
  const probe = await startProducer(probeAt.endpoint, { maxAttempts: 1, requestTimeoutMs: 10_000 });
  const startedAt = performance.now();
  let stopped = false;
  let stopping: Promise<void> | undefined;
  const load: Load = {
    topic,
    acknowledged: new Set(),
    failed: [],
    longestSendMs: 0,
    sent: 0,
    answered: [],
    probes: [],
    stop() {
      stopped = true;
      stopping ??= Promise.all([sending, probing]).then(async () => {
        await Promise.all([producer.close(), probe.close()]);
      });
      return stopping;
    },
  };
  const sender = async (p: Producer) => {
    while (!stopped && load.sent < MAX_MESSAGES) {
      const payload = body(topic, load.sent++);
      const sentAt = performance.now();
      try {
        await p.send({ topic, body: payload });
        load.acknowledged.add(payload);
        load.answered.push({ sentAtMs: sentAt, answeredAtMs: performance.now() });
      } catch (error) {
        load.failed.push(`${payload}: ${(error as Error).message}`);
      }
      load.longestSendMs = Math.max(load.longestSendMs, performance.now() - sentAt);
      // Steady, not flat out: a few hundred messages a second from all senders together.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const sending = Promise.all(Array.from({ length: SENDERS }, () => sender(producer)));
  const probing = (async () => {
    for (let n = 0; !stopped && n < MAX_MESSAGES; n++) {
      const atMs = performance.now() - startedAt;
      const outcome = await probe.send({ topic: `probe-${topic}`, body: `${n}` }).then(
        () => 'ok',
        (error: { code?: unknown; name?: string }) => String(error.code ?? error.name),
      );
      load.probes.push({ atMs, outcome });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return { load, acks, retries, startedAt };
}

/** The probe's view of a fault between `fromMs` and `toMs` (ms since the load started): its first and last 503. */
export function window503(load: Load, fromMs: number): { count: number; firstMs?: number; lastMs?: number } {
  const seen = load.probes.filter((probe) => probe.atMs >= fromMs && probe.outcome === '503');
  return {
    count: seen.length,
    ...(seen[0] ? { firstMs: Math.round(seen[0].atMs - fromMs) } : {}),
    ...(seen.at(-1) ? { lastMs: Math.round((seen.at(-1)?.atMs ?? 0) - fromMs) } : {}),
  };
}

/**
 * How long after `atMs` (`performance.now()`) sends resumed: the first answer to a send begun at
 * or after it. A send begun once the database died cannot have committed there, so its answer
 * came from the database that replaced it; `undefined` while none is answered.
 */
export function resumedAfter(load: Load, atMs: number): number | undefined {
  let first: number | undefined;
  for (const { sentAtMs, answeredAtMs } of load.answered) {
    if (sentAtMs >= atMs && (first === undefined || answeredAtMs < first)) first = answeredAtMs;
  }
  return first === undefined ? undefined : first - atMs;
}

/** The bodies of `topic` stored in every queue of the database, duplicates kept. */
async function storedBodies(sql: postgres.Sql, topic: string): Promise<string[]> {
  const bodies: string[] = [];
  const marker = new RegExp(`${topic.replace(/[-]/g, '\\-')}#\\d+#`);
  for (let queue = 0; queue < QUEUES; queue++) {
    const table = queue === 0 ? 'ricochet_messages' : `ricochet_q${queue}.ricochet_messages`;
    const rows = await sql.unsafe<{ value: Buffer }[]>(`select value from ${table} where topic = $1`, [
      topic,
    ]);
    for (const row of rows) bodies.push(marker.exec(row.value.toString('latin1'))?.[0] ?? '?');
  }
  return bodies;
}

/** Every take of each queue's lease, and the lease: one owner per epoch, and the lease at the last take. */
async function fenceRecords(sql: postgres.Sql) {
  const queues = [];
  for (let queue = 0; queue < QUEUES; queue++) {
    const schema = queue === 0 ? '' : `ricochet_q${queue}.`;
    const takes = await sql.unsafe<{ epoch: string; owner: string }[]>(
      `select epoch, owner from ${schema}ricochet_lease_takes order by epoch`,
    );
    const [lease] = await sql.unsafe<{ epoch: string; owner: string }[]>(
      `select epoch, owner from ${schema}ricochet_lease where id = 1`,
    );
    queues.push({
      queue,
      takes: takes.map((take) => ({ epoch: Number(take.epoch), owner: take.owner })),
      lease: { epoch: Number(lease?.epoch), owner: lease?.owner },
    });
  }
  return queues;
}

/**
 * `read`, asked again while the broker answers `503` (a broker whose queue is between owners right
 * after the fault healed says so, and a client tries again), at most {@link SERVED_WITHIN_MS}.
 */
function untilServed<T>(read: () => Promise<T>): () => Promise<T> {
  return async () => {
    const deadline = performance.now() + SERVED_WITHIN_MS;
    for (let tries = 0; ; tries++) {
      try {
        return await read();
      } catch (error) {
        const unavailable = error instanceof Error && / → 503: /.test(error.message);
        if (!unavailable || tries >= 1_000 || performance.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
}

/** How long {@link untilServed} asks again while the broker answers `503`. */
const SERVED_WITHIN_MS = 10_000;

/**
 * The checks every case ends with, once the fault healed and the load stopped: 0 lost, 0 stored
 * twice, each group's committed (and DLQ) equal to what was stored, and the fence records sound.
 * @returns what it counted, one line for the test to print.
 */
export async function expectSound(store: string, run: LoadRun, admin: AdminApi): Promise<string> {
  const { load } = run;
  const sql = postgres(store, { max: 1, onnotice: () => {} });
  try {
    const bodies = await storedBodies(sql, load.topic);
    const stored = new Set(bodies);
    const lost = [...load.acknowledged].filter((b) => !stored.has(b));
    const twice = bodies.length - stored.size;
    const poisonStored = [...stored].filter((b) => poison(Number(b.split('#')[1]))).length;
    const statsOf = (group: string) => untilServed(() => admin.getGroup(group).then((g) => g.stats));
    const [acks, retries] = await Promise.all([
      eventually(statsOf(`acks-${load.topic}`), (s) => s.committed >= stored.size, 60_000),
      eventually(
        statsOf(`retries-${load.topic}`),
        (s) => s.committed + s.dlq >= stored.size && s.waitingRetry === 0 && s.inflight === 0,
        60_000,
      ),
    ]);
    const fences = await fenceRecords(sql);
    const summary =
      `${load.topic}: ${load.sent} sent, ${load.acknowledged.size} acknowledged, ${load.failed.length} failed, ` +
      `${stored.size} stored, ${lost.length} lost, ${twice} stored twice; longest send ${Math.round(load.longestSendMs)} ms; ` +
      `acks committed ${acks.committed}; retries committed ${retries.committed} + dlq ${retries.dlq} ` +
      `(${run.retries.deliveries.length} deliveries); fence records: ${fences
        .map((q) => `q${q.queue} epochs ${q.takes.map((t) => t.epoch).join(',')}`)
        .join('; ')}`;
    expect(lost).toEqual([]);
    expect(twice).toBe(0);
    expect(load.acknowledged.size).toBeGreaterThan(0);
    expect(acks.committed).toBe(stored.size);
    expect(retries.committed + retries.dlq).toBe(stored.size);
    expect(retries.dlq).toBe(poisonStored);
    // Retries happened: more deliveries than messages.
    expect(run.retries.deliveries.length).toBeGreaterThan(stored.size);
    for (const { takes, lease } of fences) {
      const epochs = takes.map((take) => take.epoch);
      // One row per epoch (the primary key), rising; the lease is at its last take, by that take's owner.
      expect(new Set(epochs).size).toBe(epochs.length);
      expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
      expect(takes.at(-1)).toEqual(lease);
    }
    return summary;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** How many times any queue's lease was taken, over the whole run so far. */
export async function leaseTakes(store: string): Promise<number> {
  const sql = postgres(store, { max: 1, onnotice: () => {} });
  try {
    return (await fenceRecords(sql)).reduce((sum, queue) => sum + queue.takes.length, 0);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export async function closeRun(run: LoadRun) {
  await run.load.stop();
  await Promise.all([run.acks.close(), run.retries.close()]);
}
