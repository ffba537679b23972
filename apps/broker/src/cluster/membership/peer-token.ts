import { randomBytes } from 'node:crypto';
import postgres from '../../store/postgres/driver.js';
import { SCHEMA_LOCK } from '../../store/postgres/postgres-schema.js';

/**
 * The cluster's peer token (`gateway/peer-access.ts`): what a broker shows another to open a
 * session between them. The first broker of a database draws it at random; every broker reads the
 * same one from the database, so only brokers with the database's credentials can have it, and
 * nobody has to configure it. It lives in queue 0's schema, beside the broker registry.
 */
export async function readPeerToken(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    return await sql.begin(async (tx) => {
      // Brokers starting at once would race on creating the table (`broker-registry.ts` does the same).
      await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
      await tx`create table if not exists ricochet_peer_token (
        id smallint primary key check (id = 1),
        token text not null
      )`;
      await tx`insert into ricochet_peer_token (id, token)
        values (1, ${randomBytes(32).toString('base64url')}) on conflict (id) do nothing`;
      const [row] = await tx<{ token: string }[]>`select token from ricochet_peer_token where id = 1`;
      if (row === undefined) throw new Error('the peer token row vanished while it was read');
      return row.token;
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
