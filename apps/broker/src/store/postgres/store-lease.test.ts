import postgres, { type Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { LivenessLock } from './liveness-lock.js';
import { preparePostgresSchema } from './postgres-schema.js';
import { postgresForThisFile } from './postgres-server.test-support.js';
import { LeaseGate, StoreLease } from './store-lease.js';

const pg = postgresForThisFile();

/** A lease far longer than any test: a takeover seen here came from the liveness lock, not expiry. */
const LONG_TTL_MS = 600_000;

async function freshDatabase(): Promise<{ url: string; sql: Sql }> {
  const url = await pg.createDatabase('lease');
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  pg.cleanup(() => sql.end({ timeout: 5 }));
  await preparePostgresSchema(sql);
  return { url, sql };
}

function livenessLock(url: string): LivenessLock {
  const lock = LivenessLock.open(url);
  pg.cleanup(() => lock.close());
  return lock;
}

/** Acquire as `owner`, giving up after `waitMs`: resolves `undefined` when it had to give up. */
async function acquireWithin(
  sql: Sql,
  owner: string,
  liveness: LivenessLock | undefined,
  waitMs: number,
): Promise<StoreLease | undefined> {
  try {
    return await StoreLease.acquire(sql, {
      owner,
      ttlMs: LONG_TTL_MS,
      ...(liveness ? { liveness } : {}),
      signal: AbortSignal.timeout(waitMs),
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'TimeoutError') return undefined;
    throw error;
  }
}

async function liveEpoch(sql: Sql): Promise<{ epoch: number; liveEpoch: number }> {
  const [row] = await sql<{ epoch: string; live_epoch: string }[]>`
    select epoch, live_epoch from ricochet_lease where id = 1`;
  return { epoch: Number(row?.epoch), liveEpoch: Number(row?.live_epoch) };
}

describe('the store lease and the liveness lock', () => {
  it("takes a live lease over once the owner's session is gone, long before it expires", async () => {
    const { url, sql } = await freshDatabase();
    const ownerLock = livenessLock(url);
    const owner = await StoreLease.acquire(sql, { owner: 'first', ttlMs: LONG_TTL_MS, liveness: ownerLock });
    expect(await liveEpoch(sql)).toEqual({ epoch: owner.epoch, liveEpoch: owner.epoch });
    // While the owner's session lives, a standby waits: the lease has ten minutes to run.
    expect(await acquireWithin(sql, 'second', livenessLock(url), 1_500)).toBeUndefined();
    // The owner's process dies: its session ends, and the database lets go of the lock.
    await ownerLock.close();
    const started = performance.now();
    const standby = await acquireWithin(sql, 'second', livenessLock(url), 30_000);
    expect(standby?.epoch).toBe(owner.epoch + 1);
    // Two sightings of the free lock, one poll (250 ms) apart.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await liveEpoch(sql)).toEqual({ epoch: owner.epoch + 1, liveEpoch: owner.epoch + 1 });
  });

  it('never takes over early from an owner that took the lease without the lock (or an older broker)', async () => {
    const { url, sql } = await freshDatabase();
    const owner = await StoreLease.acquire(sql, { owner: 'first', ttlMs: LONG_TTL_MS });
    expect(await liveEpoch(sql)).toEqual({ epoch: owner.epoch, liveEpoch: 0 });
    // No session holds the lock, yet nothing says this owner's session is gone.
    expect(await acquireWithin(sql, 'second', livenessLock(url), 1_500)).toBeUndefined();
  });

  it('lets an owner that took the lease without the lock claim it later, after which its end is seen', async () => {
    const { url, sql } = await freshDatabase();
    // A paused ex-owner's session still holds the lock when this broker takes the lease.
    const pausedLock = livenessLock(url);
    expect(await pausedLock.take()).toBe(true);
    const ownerLock = livenessLock(url);
    const owner = await StoreLease.acquire(sql, { owner: 'first', ttlMs: LONG_TTL_MS, liveness: ownerLock });
    expect(ownerLock.held).toBe(false);
    await owner.keepLive();
    expect(await liveEpoch(sql)).toMatchObject({ liveEpoch: 0 });
    // The paused broker wakes, finds itself deposed and exits: its session ends.
    await pausedLock.close();
    await owner.keepLive();
    expect(ownerLock.held).toBe(true);
    expect(await liveEpoch(sql)).toEqual({ epoch: owner.epoch, liveEpoch: owner.epoch });
    await ownerLock.close();
    expect((await acquireWithin(sql, 'second', livenessLock(url), 30_000))?.epoch).toBe(owner.epoch + 1);
  });

  it('takes the lock back when its session drops, so that a standby does not take the store over', async () => {
    const { url, sql } = await freshDatabase();
    const ownerLock = livenessLock(url);
    const owner = await StoreLease.acquire(sql, { owner: 'first', ttlMs: LONG_TTL_MS, liveness: ownerLock });
    const standbyLock = livenessLock(url);
    const standby = acquireWithin(sql, 'second', standbyLock, 3_000);
    // The owner's liveness session is cut (as by a database restart): the owner reconnects and
    // takes its lock back within a poll, so the standby never sees it free twice in a row.
    const [session] = await sql<{ pid: number }[]>`
      select pid from pg_locks where locktype = 'advisory' and objid::bigint = ${0x72696331} and granted`;
    await sql`select pg_terminate_backend(${session?.pid ?? 0})`;
    expect(await standby).toBeUndefined();
    expect(ownerLock.held).toBe(true);
    expect(await liveEpoch(sql)).toEqual({ epoch: owner.epoch, liveEpoch: owner.epoch });
  });

  it('gives the lock back after each sighting while the owner lives', async () => {
    const { url, sql } = await freshDatabase();
    await StoreLease.acquire(sql, { owner: 'first', ttlMs: LONG_TTL_MS });
    const standbyLock = livenessLock(url);
    expect(await acquireWithin(sql, 'second', standbyLock, 600)).toBeUndefined();
    expect(standbyLock.held).toBe(false);
  });

  it('marks nothing and keeps no lock when a deposed owner claims it', async () => {
    const { url, sql } = await freshDatabase();
    const deposedLock = livenessLock(url);
    const deposed = await StoreLease.acquire(sql, { owner: 'first', ttlMs: 50, liveness: deposedLock });
    await deposedLock.giveBack();
    const current = await StoreLease.acquire(sql, { owner: 'second', ttlMs: LONG_TTL_MS });
    await deposed.keepLive();
    expect(deposedLock.held).toBe(false);
    expect(await liveEpoch(sql)).toEqual({ epoch: current.epoch, liveEpoch: 0 });
    expect(deposedLock.held).toBe(false);
  });

  it('takes no lease while its gate is closed, though the lease is free, and takes it once the gate opens', async () => {
    const { url, sql } = await freshDatabase();
    const gate = new LeaseGate();
    // Free, but not this broker's to take yet: a queue past 0 before its broker owns queue 0.
    const gated = StoreLease.acquire(sql, {
      owner: 'standby',
      ttlMs: LONG_TTL_MS,
      liveness: livenessLock(url),
      gate,
      signal: AbortSignal.timeout(20_000),
    });
    let taken = false;
    void gated.then(() => {
      taken = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(taken).toBe(false);
    expect(await liveEpoch(sql)).toEqual({ epoch: 0, liveEpoch: 0 });
    gate.open();
    const lease = await gated;
    expect(lease.epoch).toBe(1);
  });
});

describe('a lease whose holder hangs inside a write transaction', () => {
  it("ends the holder's stalled session once its lease expired, takes the lease, and fences the holder", {
    timeout: 30_000,
  }, async () => {
    const { url, sql } = await freshDatabase();
    const ttlMs = 300;
    const owner = await StoreLease.acquire(sql, { owner: 'first', ttlMs });
    // The owner's writer: its fence locked the lease row, and it never commits (a broker stopped
    // mid-transaction; its kernel keeps the connection up). No idle timeout on this session.
    const writer = postgres(url, { max: 1, onnotice: () => {} });
    pg.cleanup(() => writer.end({ timeout: 1 }));
    let releaseHang = () => {};
    const hang = new Promise<void>((resolve) => (releaseHang = resolve));
    const stalled = writer.begin(async (tx) => {
      await owner.fence(tx);
      await hang;
      await tx`select 1`;
    });
    stalled.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 50));

    const started = performance.now();
    const taken = await StoreLease.acquire(sql, {
      owner: 'second',
      ttlMs,
      signal: AbortSignal.timeout(20_000),
    });
    expect(taken.epoch).toBe(owner.epoch + 1);
    // The lease's TTL, then one lock wait as long, and the end of the stalled session.
    expect(performance.now() - started).toBeLessThan(10_000);
    // The hung broker wakes: its transaction is gone, and the fence refuses whatever it sends next.
    releaseHang();
    await expect(stalled).rejects.toThrow();
    await expect(owner.fence(sql)).rejects.toMatchObject({ code: 'RCF01' });
  });
});
