import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { startPostgres } from './postgres-server.js';
import { acceptsConnections } from './wait-until-ready.js';

/**
 * initdb alone takes a few seconds on a busy 2-core machine (the whole suite runs beside it), and
 * the server fsyncs every commit and CREATE DATABASE: a generous bound, never the expected time.
 */
const TEST_TIMEOUT_MS = 180_000;

describe('startPostgres', () => {
  it(
    'serves databases of their own until stopped, then frees its port and removes its data',
    async () => {
      const server = await startPostgres();
      let dataDir = '';
      try {
        expect(server.url).toBe(`postgres://ricochet@127.0.0.1:${server.port}/postgres`);
        const ordersUrl = await server.createDatabase('orders');
        const auditUrl = await server.createDatabase('audit_2');
        expect(ordersUrl).toBe(`postgres://ricochet@127.0.0.1:${server.port}/orders`);

        const orders = postgres(ordersUrl, { max: 1, onnotice: () => {} });
        const audit = postgres(auditUrl, { max: 1, onnotice: () => {} });
        try {
          await orders`CREATE TABLE line (id int PRIMARY KEY, body text NOT NULL)`;
          await orders`INSERT INTO line (id, body) VALUES (1, 'first')`;
          expect(await orders`SELECT id, body FROM line`).toEqual([{ id: 1, body: 'first' }]);
          // Two databases, not two names for one: the table exists in the first only.
          expect(await audit`SELECT to_regclass('line') AS line`).toEqual([{ line: null }]);
          const [settings] = await orders`
            SELECT current_setting('data_directory') AS data_dir, current_setting('fsync') AS fsync`;
          expect(settings?.fsync).toBe('on');
          dataDir = String(settings?.data_dir);
          expect(existsSync(dataDir)).toBe(true);
        } finally {
          await Promise.all([orders.end(), audit.end()]);
        }

        await expect(server.createDatabase('orders')).rejects.toThrow(/already exists/);
        await expect(server.createDatabase('Orders; DROP')).rejects.toThrow(/invalid database name/);
      } finally {
        await server.stop();
      }

      expect(await acceptsConnections(server.port)).toBe(false);
      expect(existsSync(dataDir)).toBe(false);
      await server.stop(); // idempotent
      await expect(server.createDatabase('late')).rejects.toThrow(/stopped/);
    },
    TEST_TIMEOUT_MS,
  );
});
