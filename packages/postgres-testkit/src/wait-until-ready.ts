import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import type { PostgresProcess } from './postgres-process.js';

/** How long a starting server may take to answer a query; it takes well under a second when idle. */
export const READY_WITHIN_MS = 30_000;
/** The pause between two tries. */
const RETRY_DELAY_MS = 50;
/** How long one TCP connect may take on loopback. */
const CONNECT_WITHIN_MS = 1_000;
/** How long one query's connection may take (postgres.js counts this timeout in seconds). */
const QUERY_CONNECT_TIMEOUT_S = 2;

/** How the wait ended. */
export type Readiness = 'ready' | 'exited' | 'timed-out';

/**
 * Wait until the server at `url` answers a real query: a listening socket is not enough, since
 * during startup it refuses sessions with "the database system is starting up". Gives up when the
 * server exits, or after {@link READY_WITHIN_MS}.
 */
export async function waitUntilReady(server: PostgresProcess, url: string, port: number): Promise<Readiness> {
  const deadline = Date.now() + READY_WITHIN_MS;
  const exited = server.whenExited().then(() => false);
  while (!server.hasExited) {
    // The TCP connect is the cheap test while the server has not bound its port yet.
    const ready =
      (await Promise.race([acceptsConnections(port), exited])) &&
      (await Promise.race([answers(url), exited]));
    if (ready) return 'ready';
    if (Date.now() >= deadline) return 'timed-out';
    await sleep(RETRY_DELAY_MS);
  }
  return 'exited';
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` within a second. */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(CONNECT_WITHIN_MS);
    const finish = (connected: boolean) => {
      socket.destroy();
      resolve(connected);
    };
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
    socket.once('timeout', () => finish(false));
  });
}

async function answers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: QUERY_CONNECT_TIMEOUT_S, onnotice: () => {} });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end();
  }
}
