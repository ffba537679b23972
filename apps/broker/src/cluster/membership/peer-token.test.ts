import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../store/postgres/postgres-server.test-support.js';
import { readPeerToken } from './peer-token.js';

const pg = postgresForThisFile();

describe('the peer token', () => {
  it('is drawn once per database, at random, and every broker reads the same', async () => {
    const url = await pg.createDatabase('peer_token');
    // Brokers starting together: one draws it, all read that one.
    const tokens = await Promise.all([readPeerToken(url), readPeerToken(url), readPeerToken(url)]);
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await readPeerToken(url)).toBe(tokens[0]);

    const other = await readPeerToken(await pg.createDatabase('peer_token'));
    expect(other).not.toBe(tokens[0]);
  });
});
