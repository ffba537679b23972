import { readinessAnswerSchema } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { AuthFileFixture, adminRequest } from './support/security.js';
import { startBroker } from './support/test-broker.js';

/**
 * `GET /readyz` (docs/guides/operations.md#probes): what an orchestrator waits for before it sends
 * a broker work. On the embedded store, 200 once the broker listens; on PostgreSQL (the
 * `contract-postgres` runs), from every broker a client may reach, the standbys relaying to the
 * owner and, with queues spread, each of the three brokers sharing them, 200 once every queue has
 * an owner. A broker that says ready takes an admin write at once (the 503 window after a start
 * that `/healthz` does not show). The 503 before readiness: `apps/broker/src/cluster/spread.test.ts`.
 */
describe('GET /readyz', () => {
  it('answers ready from every broker a client may reach, which then take admin writes', async () => {
    await using broker = await startBroker();
    const endpoints = [0, 1, 2].map(() => broker.endpointFor('http'));
    for (const [index, endpoint] of endpoints.entries()) {
      const response = await adminRequest(endpoint, 'GET', '/readyz');
      expect(response.status, endpoint).toBe(200);
      expect(readinessAnswerSchema.parse(await response.json())).toEqual({ status: 'ready' });
      const saved = await adminRequest(endpoint, 'PUT', `/v1/groups/ready-${index}`, {
        body: { maxRetries: 2 },
      });
      expect(saved.status, `${endpoint}: ${await saved.clone().text()}`).toBe(200);
    }
    const groups = await broker.admin.listGroups();
    expect(groups.groups.map((group) => group.name)).toEqual(['ready-0', 'ready-1', 'ready-2']);
  });

  it('is open without a token, like /healthz, where the admin API asks for one', async () => {
    using auth = new AuthFileFixture({ ops: { admin: 'write' } });
    await using broker = await startBroker({ authFile: auth.path });
    const ready = await adminRequest(broker.endpoint, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect((await adminRequest(broker.endpoint, 'GET', '/v1/groups')).status).toBe(401);
  });
});
