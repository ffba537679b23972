import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AdminApi } from './admin-api.js';
import { parseBrokerEndpoint } from './broker-endpoint.js';
import { CliError } from './cli-error.js';

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** An admin API on a free port that answers every request with `body`. */
async function adminAnswering(body: unknown): Promise<AdminApi> {
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new AdminApi(parseBrokerEndpoint(`ws://127.0.0.1:${port}`), undefined);
}

describe('AdminApi.call', () => {
  it('hands back an answer that matches its schema as the broker sent it', async () => {
    const admin = await adminAnswering({ storedBytes: 42, addedLater: 'kept' });
    expect(await admin.call('GET /v1/store', '/v1/store')).toEqual({ storedBytes: 42, addedLater: 'kept' });
  });

  it('fails with FAILED, naming the field, when the answer does not match its schema', async () => {
    const admin = await adminAnswering({ messages: [], cursor: 'next' });
    const failure = await admin.call('GET /v1/groups/:group/dlq', '/v1/groups/billing/dlq').catch((e) => e);
    expect(failure).toBeInstanceOf(CliError);
    expect(failure).toMatchObject({ exit: 'FAILED', hint: 'is the broker the same version as the CLI?' });
    expect(failure.message).toMatch(
      /^GET \/v1\/groups\/billing\/dlq answered something the CLI does not understand: cursor: /,
    );
  });
});
