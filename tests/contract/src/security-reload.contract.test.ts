import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startChildBroker } from './support/child-broker.js';
import { startProducer } from './support/clients.js';
import { eventually } from './support/push.js';
import { AuthFileFixture, adminRequest, TokenSocket } from './support/security.js';
import { startBroker } from './support/test-broker.js';

const messageId = (n: number) => `reload${String(n).padStart(26, '0')}`;

describe('the auth file is reloaded on SIGHUP; a bad one is refused and the old one kept (DESIGN.md §7)', () => {
  it('applies changed permissions to open sessions, ends those whose token was removed, admits new tokens', async () => {
    using auth = new AuthFileFixture({
      ops: { admin: 'write' },
      'orders-service': { publish: ['orders'] },
      leaver: { publish: ['orders'] },
    });
    await using broker = await startBroker({ authFile: auth.path });
    await using producer = await startProducer(broker.endpoint, { token: auth.token('orders-service') });
    await producer.send({ topic: 'orders', body: 'before' });
    await using leaver = await TokenSocket.open(broker.endpoint, auth.token('leaver'));

    auth.write({
      ops: { admin: 'write' },
      'orders-service': { publish: ['audit'] },
      late: { admin: 'read' },
    });
    expect(await broker.broker.reloadAuth()).toEqual({ ok: true, principals: 3 });

    // The same open session, judged by the new file at its next request.
    await expect(producer.send({ topic: 'orders', body: 'after' })).rejects.toMatchObject({ code: 403 });
    expect(await producer.send({ topic: 'audit', body: 'after' })).toMatchObject({ offset: 0 });
    expect(
      (await adminRequest(broker.endpoint, 'GET', '/v1/topics', { token: auth.token('late') })).status,
    ).toBe(200);
    // A removed token: 401 at the next request, and the session ends with 1008.
    leaver.send({
      type: 'send',
      id: 1,
      messages: [{ messageId: messageId(1), topic: 'orders', body: new Uint8Array(1), bornAt: 1 }],
    });
    expect(await leaver.next()).toMatchObject({ type: 'error', id: 1, code: 401 });
    expect(await leaver.closed).toBe(1008);
    const orders = await adminRequest(broker.endpoint, 'GET', '/v1/topics/orders', {
      token: auth.token('ops'),
    });
    expect(await orders.json()).toMatchObject({ stats: { messages: 1 } });
  });

  it('refuses a file that is not JSON or fails validation, and keeps the one in force', async () => {
    using auth = new AuthFileFixture({ ops: { admin: 'write' } });
    await using broker = await startBroker({ authFile: auth.path });
    const ops = auth.token('ops');

    auth.writeRaw('{ "principals": [ { "name": "half-written"');
    expect(await broker.broker.reloadAuth()).toMatchObject({
      ok: false,
      message: expect.stringContaining('not JSON'),
    });
    auth.writeRaw(JSON.stringify({ principals: [{ name: 'ops', tokenSha256: 'not hex', admin: 'write' }] }));
    expect(await broker.broker.reloadAuth()).toMatchObject({
      ok: false,
      message: expect.stringContaining('principals[0].tokenSha256'),
    });
    auth.writeRaw(JSON.stringify({ principals: [] }));
    rmSync(auth.path);
    expect(await broker.broker.reloadAuth()).toMatchObject({
      ok: false,
      message: expect.stringContaining('cannot read'),
    });

    expect((await adminRequest(broker.endpoint, 'GET', '/v1/topics', { token: ops })).status).toBe(200);
    expect(
      (await adminRequest(broker.endpoint, 'PUT', '/v1/groups/still-mine', { token: ops, body: {} })).status,
    ).toBe(200);
  });

  it('reloads on a real SIGHUP to the ricochet-broker process', { timeout: 60_000 }, async () => {
    using auth = new AuthFileFixture({ ops: { admin: 'read' } });
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-sighup-'));
    try {
      await using child = await startChildBroker(dataDir, ['--auth-file', auth.path]);
      const status = async (token: string) =>
        (await adminRequest(child.endpoint, 'GET', '/v1/topics', { token })).status;
      expect(await status(auth.token('ops'))).toBe(200);

      // A broken file first: refused, the process lives on with the old principals.
      auth.writeRaw('{');
      child.process.kill('SIGHUP');
      // Only once the broker has read (and refused) it may the file change again: a rewrite
      // before the read would be the one refused-or-not.
      await child.printed(/auth file refused on reload/);
      auth.write({ ops: { admin: 'read' }, late: { admin: 'read' } });
      expect(await status(auth.token('late'))).toBe(401);
      child.process.kill('SIGHUP');
      await eventually(
        () => status(auth.token('late')),
        (code) => code === 200,
        30_000,
      );
      expect(await status(auth.token('ops'))).toBe(200);
      expect(child.process.exitCode).toBeNull();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
