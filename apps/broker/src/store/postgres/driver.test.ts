import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import postgres from './driver.js';
import { postgresForThisFile } from './postgres-server.test-support.js';

/**
 * The patched driver (patches/postgres@3.4.9.patch) where a connection closes under a write: the
 * cases a database failover or `pg_terminate_backend` produce, made deterministic by closing the
 * driver's own socket in the same turn as the write.
 */
const pg = postgresForThisFile();

/**
 * A driver of one connection whose sockets the test holds, the newest last; `prepare` sees each
 * new socket, with its index, before the driver does.
 */
async function driverWithSockets(
  prepare: (socket: Socket, index: number) => void = () => {},
): Promise<{ readonly sql: postgres.Sql; readonly sockets: Socket[] }> {
  const url = new URL(await pg.createDatabase('driver'));
  const sockets: Socket[] = [];
  // postgres.js takes a socket of the caller's (the same TCP connection it would make itself);
  // its types leave the option out, so it goes in through a variable, not a literal.
  const options = {
    max: 1,
    onnotice: () => {},
    socket: () => {
      const socket = connect(Number(url.port), url.hostname);
      prepare(socket, sockets.length);
      sockets.push(socket);
      return socket;
    },
  };
  const sql = postgres(url.toString(), options);
  pg.cleanup(() => sql.end({ timeout: 5 }));
  return { sql, sockets };
}

/** `promise`, or a rejection naming `what` after `ms`: a hang fails the test instead of its timeout. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms),
    ),
  ]);
}

/**
 * The ErrorResponse a backend sends as it is terminated (`pg_terminate_backend`, or the primary's
 * postmaster going away in a failover): FATAL 57P01.
 */
function terminationError(): Buffer {
  const fields = Buffer.from(
    'SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0',
  );
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
}

describe('the PostgreSQL driver, patched', () => {
  it('connects again and answers when the backend is terminated while the connection fetches its array types', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // The first socket's backend "is terminated" the moment the driver asks for its array
      // types, the first query of every new connection: the ErrorResponse arrives, then the
      // socket closes, as a failover's first seconds do to connections still starting.
      const { sql, sockets } = await driverWithSockets((socket, index) => {
        if (index > 0) return;
        const write = socket.write.bind(socket) as (chunk: Uint8Array) => boolean;
        socket.write = ((chunk: Uint8Array) => {
          if (!Buffer.from(chunk).includes('typarray')) return write(chunk);
          setImmediate(() => {
            socket.emit('data', terminationError());
            socket.destroy();
          });
          return true;
        }) as typeof socket.write;
      });
      // Unpatched, the driver's own types query rejected with nobody to catch it (which ends a
      // broker), and the next socket's ReadyForQuery replayed the old backend's 57P01 onto this
      // query (porsager/postgres#1192, #1223).
      expect(await within(sql`select 1 as one`.execute(), 5_000, 'the first query')).toEqual([{ one: 1 }]);
      expect(sockets).toHaveLength(2);
      // Unhandled rejections are reported once the microtasks of a turn ran out.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('connects again and answers after its socket closed with a write still waiting to go out', async () => {
    const { sql, sockets } = await driverWithSockets();
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    // A small query made in a setImmediate (as the store sends its batches, at the end of a turn)
    // is buffered for the next one; the socket's close comes first, in this loop iteration's close
    // phase. Unpatched, the timer it cleared stayed set, so no later write was ever scheduled: the
    // reconnected socket never got its StartupMessage and the next query hung until
    // connect_timeout (30 s).
    const { cut } = await new Promise<{ readonly cut: Promise<unknown> }>((resolve) =>
      setImmediate(() => {
        const query = sql`select 2 as two`.execute();
        sockets.at(-1)?.destroy();
        // Wrapped: the query is a thenable, which resolve() would wait for.
        resolve({ cut: query });
      }),
    );
    await expect(cut).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(await within(sql`select 3 as three`.execute(), 5_000, 'the query after the close')).toEqual([
      { three: 3 },
    ]);
    expect(sockets).toHaveLength(2);
  });
});
