import { describe, expect, it } from 'vitest';
import { AuthFileFixture, adminRequest, counterValue } from './support/security.js';
import { startBroker } from './support/test-broker.js';

const PRINCIPALS = {
  ops: { admin: 'write', metrics: true },
  auditor: { admin: 'read' },
  prometheus: { metrics: true },
  'orders-service': { publish: ['orders'] },
} as const;

describe('the admin API and /metrics take a Bearer token (DESIGN.md §7)', () => {
  it('answers a missing or unknown token with 401 everywhere but /healthz', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using broker = await startBroker({ authFile: auth.path });
    expect((await adminRequest(broker.endpoint, 'GET', '/healthz')).status).toBe(200);
    for (const token of [undefined, 'forged']) {
      for (const [method, path] of [
        ['GET', '/metrics'],
        ['GET', '/v1/topics'],
        ['GET', '/v1/groups/billing'],
        ['PUT', '/v1/groups/billing'],
        ['POST', '/v1/groups/billing/dlq/redrive'],
        ['GET', '/v1/no-such-route'],
      ] as const) {
        const response = await adminRequest(
          broker.endpoint,
          method,
          path,
          token === undefined ? {} : { token },
        );
        expect(response.status, `${method} ${path} with ${token}`).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(await response.json()).toMatchObject({ error: { code: 401, name: 'UNAUTHORIZED' } });
      }
    }
    // Nothing was created by the refused PUT.
    const groups = await adminRequest(broker.endpoint, 'GET', '/v1/groups', { token: auth.token('ops') });
    expect(await groups.json()).toMatchObject({ groups: [] });
  });

  it('lets admin read GET but not PUT or POST (403, nothing changes)', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using broker = await startBroker({ authFile: auth.path });
    const ops = auth.token('ops');
    const auditor = auth.token('auditor');
    expect(
      (
        await adminRequest(broker.endpoint, 'PUT', '/v1/groups/billing', {
          token: ops,
          body: { maxRetries: 2 },
        })
      ).status,
    ).toBe(200);
    const read = await adminRequest(broker.endpoint, 'GET', '/v1/groups/billing', { token: auditor });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ config: { maxRetries: 2 } });

    const put = await adminRequest(broker.endpoint, 'PUT', '/v1/groups/billing', {
      token: auditor,
      body: { maxRetries: 9 },
    });
    expect(put.status).toBe(403);
    expect(await put.json()).toMatchObject({ error: { code: 403, name: 'FORBIDDEN' } });
    const created = await adminRequest(broker.endpoint, 'PUT', '/v1/topics/new-topic', {
      token: auditor,
      body: {},
    });
    expect(created.status).toBe(403);
    const redrive = await adminRequest(broker.endpoint, 'POST', '/v1/groups/billing/dlq/redrive', {
      token: auditor,
      body: {},
    });
    expect(redrive.status).toBe(403);

    const after = await adminRequest(broker.endpoint, 'GET', '/v1/groups/billing', { token: ops });
    expect(await after.json()).toMatchObject({ config: { maxRetries: 2 } });
    expect((await adminRequest(broker.endpoint, 'GET', '/v1/topics/new-topic', { token: ops })).status).toBe(
      404,
    );
  });

  it('answers 403 alike for what exists and what does not, so a refusal leaks nothing', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using broker = await startBroker({ authFile: auth.path });
    const ops = auth.token('ops');
    await adminRequest(broker.endpoint, 'PUT', '/v1/groups/exists', { token: ops, body: {} });
    const outsider = auth.token('orders-service');
    const answers = [];
    for (const path of [
      '/v1/groups/exists',
      '/v1/groups/missing',
      '/v1/messages/00000000000000000000000000000000',
    ]) {
      const response = await adminRequest(broker.endpoint, 'GET', path, { token: outsider });
      answers.push({
        status: response.status,
        body: (await response.json()) as { error: { message: string } },
      });
    }
    expect(answers.map(({ status }) => status)).toEqual([403, 403, 403]);
    expect(new Set(answers.map(({ body }) => body.error.message)).size).toBe(1);
  });

  it('serves /metrics only with the metrics permission, and counts failures by reason', async () => {
    using auth = new AuthFileFixture(PRINCIPALS);
    await using broker = await startBroker({ authFile: auth.path });
    // admin write does not include metrics, nor metrics any admin route.
    expect(
      (await adminRequest(broker.endpoint, 'GET', '/metrics', { token: auth.token('ops') })).status,
    ).toBe(200);
    expect(
      (await adminRequest(broker.endpoint, 'GET', '/metrics', { token: auth.token('auditor') })).status,
    ).toBe(403);
    expect(
      (await adminRequest(broker.endpoint, 'GET', '/v1/topics', { token: auth.token('prometheus') })).status,
    ).toBe(403);
    await adminRequest(broker.endpoint, 'GET', '/metrics');
    await adminRequest(broker.endpoint, 'GET', '/metrics', { token: 'forged' });
    const metrics = await adminRequest(broker.endpoint, 'GET', '/metrics', {
      token: auth.token('prometheus'),
    });
    expect(metrics.status).toBe(200);
    const textBody = await metrics.text();
    expect(counterValue(textBody, 'ricochet_auth_failures_total', 'reason="forbidden"')).toBe(2);
    expect(counterValue(textBody, 'ricochet_auth_failures_total', 'reason="missing_token"')).toBe(1);
    expect(counterValue(textBody, 'ricochet_auth_failures_total', 'reason="unknown_token"')).toBe(1);
  });
});
