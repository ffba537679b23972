import postgres from 'postgres';
import { describe, expect, it, vi } from 'vitest';
import {
  holdOpenTransaction,
  message,
  postgresForThisFile,
  storeDatabase,
} from './postgres-server.test-support.js';

/**
 * The PostgreSQL store when things go wrong: the lease taken over, the database unreachable or
 * stuck, a dropped connection, and a second broker waiting for the lease.
 */
const pg = postgresForThisFile();

/**
 * Another session takes the lease row's lock and keeps it until `release()`: the store's next
 * transaction waits at its fence meanwhile.
 */
function holdLeaseRowLock(url: string): { readonly held: Promise<void>; release(): Promise<void> } {
  return holdOpenTransaction(url, (tx) => tx`select 1 from ricochet_lease where id = 1 for update`);
}

describe('PostgreSQL store, its lease and its failures', () => {
  it('fails every write once another broker took the lease over, and says so once', async () => {
    const { open, sql } = await storeDatabase(pg);
    const lost: unknown[] = [];
    let fenced = 0;
    const store = await open({ onLost: (error) => lost.push(error), onFenced: () => fenced++ });
    await store.appendMessage(message('a', 0));
    // What a standby does after the TTL: a new epoch.
    await sql`update ricochet_lease set owner = 'standby', epoch = epoch + 1`;
    await expect(store.appendMessage(message('a', 1))).rejects.toThrow(/taken over/);
    // A send waiting on it is answered 503: this broker cannot serve the store now; try again.
    await expect(store.durable()).rejects.toMatchObject({
      code: 503,
      message: expect.stringMatching(/taken over/),
    });
    await expect(store.appendMessage(message('a', 2))).rejects.toThrow(/taken over/);
    expect(lost).toHaveLength(1);
    // The transaction that reached the database was refused by its fence (a renewal racing it may be too).
    expect(fenced).toBeGreaterThanOrEqual(1);
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(1);
  });

  it('gives the store up when it cannot renew its lease for longer than the lease, even while idle', async () => {
    const { open, sql } = await storeDatabase(pg);
    let lost: (error: unknown) => void = () => {};
    const gaveUp = new Promise<unknown>((resolve) => {
      lost = resolve;
    });
    const store = await open({ leaseTtlMs: 300, onLost: (error) => lost(error) });
    await store.appendMessage(message('a', 0));
    // The database stops taking this broker's connections: no renewal gets through any more.
    const [{ name } = { name: '' }] = await sql<{ name: string }[]>`select current_database() as name`;
    const admin = postgres(pg.server().url, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`alter database ${name} allow_connections false`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`;
      await expect(gaveUp).resolves.toBeDefined();
      await expect(store.appendMessage(message('a', 1))).rejects.toThrow();
    } finally {
      await admin.unsafe(`alter database ${name} allow_connections true`);
      await admin.end({ timeout: 5 });
    }
  });

  it('gives the store up when a transaction hangs past the lease, failing it and what follows', async () => {
    const { open, url } = await storeDatabase(pg);
    let lost: (error: unknown) => void = () => {};
    const gaveUp = new Promise<unknown>((resolve) => {
      lost = resolve;
    });
    const store = await open({ leaseTtlMs: 300, onLost: (error) => lost(error) });
    await store.appendMessage(message('a', 0));
    // Another session holds the lease row's lock: the store's next transaction waits at its fence.
    const lock = holdLeaseRowLock(url);
    try {
      await lock.held;
      const hung = store.appendMessage(message('a', 1));
      await expect(gaveUp).resolves.toBeDefined();
      await expect(hung).rejects.toThrow(/could not be renewed/);
      await expect(store.appendMessage(message('a', 2))).rejects.toThrow();
    } finally {
      await lock.release();
    }
  });

  it('closes a batch gathering behind a transaction in flight at the end of the turn that took it past 2,048 writes', async () => {
    const { open, url } = await storeDatabase(pg);
    const store = await open();
    await store.appendMessage(message('a', 0));
    // Another session holds the lease row's lock: the next transaction waits at its fence while
    // later turns gather behind it.
    const lock = holdLeaseRowLock(url);
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    try {
      await lock.held;
      const inFlight = store.appendMessage(message('a', 1));
      await nextTurn();
      let offset = 2;
      const turn = (count: number) => {
        let last: Promise<void> = Promise.resolve();
        for (let end = offset + count; offset < end; offset++)
          last = store.appendMessage(message('a', offset));
        return last;
      };
      const second = turn(1_500);
      await nextTurn();
      const third = turn(1_500); // 3,000 writes gathered: closed at this turn's end
      await nextTurn();
      const fourth = turn(10);
      const settled: string[] = [];
      for (const [name, written] of [
        ['second', second],
        ['third', third],
        ['fourth', fourth],
      ] as const) {
        void written.then(() => settled.push(name));
      }
      void lock.release();
      await inFlight;
      await third;
      // The second and third turns committed together; the fourth needs a transaction of its own.
      expect(settled).toEqual(['second', 'third']);
      await fourth;
      expect(store.readMessages('a', 0, 5_000)).toHaveLength(3_012);
    } finally {
      await lock.release();
    }
  }, 30_000);

  it('sends a transaction again when its connection dropped, and commits later ones after it, in order', async () => {
    const { open, sql } = await storeDatabase(pg);
    const store = await open();
    await store.appendMessage(message('a', 0));
    // Cut the store's connections, as a database failover or a network blip would.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
               where datname = current_database() and pid <> pg_backend_pid()`;
    const first = store.appendMessage(message('a', 1));
    await new Promise((resolve) => setImmediate(resolve));
    const second = store.putCursor({ group: 'g', topic: 'a', nextOffset: 2 });
    await Promise.all([first, second]);
    expect(store.readMessages('a', 0, 10).map((m) => m.offset)).toEqual([0, 1]);
    expect(store.listCursors()).toEqual([{ group: 'g', topic: 'a', nextOffset: 2 }]);
  });

  it('commits nothing of a transaction one of whose statements fails after the fence passed, and writes on once it no longer fails', async () => {
    const { open, sql } = await storeDatabase(pg);
    const store = await open({ writeRetryMs: 60_000 });
    await store.appendMessage(message('a', 0));
    // The database refuses the cursor row (the batch's last table) until the test lets it through.
    await sql.unsafe(`
      create function refuse_cursor() returns trigger language plpgsql as $$
      begin raise exception 'cursor refused'; end $$;
      create trigger refuse_cursor before insert or update on ricochet_cursors
        for each row execute function refuse_cursor()`);
    const message1 = store.appendMessage(message('a', 1));
    const cursor = store.putCursor({ group: 'g', topic: 'a', nextOffset: 2 });
    // Tried and refused at least twice: a transaction and its retry, each rolled back whole.
    await vi.waitFor(
      async () =>
        expect(
          Number(
            (
              await sql`select xact_rollback::int as n from pg_stat_database where datname = current_database()`
            )[0]?.n,
          ),
        ).toBeGreaterThanOrEqual(2),
      { timeout: 10_000 },
    );
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(1);
    await sql`drop trigger refuse_cursor on ricochet_cursors`;
    await Promise.all([message1, cursor]);
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(2);
    expect(store.listCursors()).toEqual([{ group: 'g', topic: 'a', nextOffset: 2 }]);
  });

  it('makes a broker wait for the lease while another holds it, and take it once it is given back', async () => {
    const { open } = await storeDatabase(pg);
    const owner = await open({ owner: 'first', leaseTtlMs: 60_000 });
    const waits: string[] = [];
    const standby = open({
      owner: 'second',
      leaseTtlMs: 60_000,
      onWaitingForLease: (holder) => waits.push(holder.owner),
    });
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (waits.length === 0) return;
        clearInterval(check);
        resolve();
      }, 5);
    });
    expect(waits[0]).toBe('first');
    await owner.close();
    await expect(standby).resolves.toBeDefined();
  });
});
