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

/**
 * An admin API on a free port that answers each request with the next of `statuses` (503s carry
 * `retryAfter` when given, and the broker's error body), the last one again once spent; it
 * records each request as `METHOD path`.
 */
async function adminAnsweringInTurn(statuses: readonly number[], retryAfter?: string) {
  const requests: string[] = [];
  server = createServer((request, response) => {
    const status = statuses[Math.min(requests.length, statuses.length - 1)] as number;
    requests.push(`${request.method} ${request.url}`);
    const headers = {
      'content-type': 'application/json',
      ...(retryAfter ? { 'retry-after': retryAfter } : {}),
    };
    const body =
      status === 503
        ? {
            error: { code: 503, name: 'BROKER_UNAVAILABLE', message: 'queue 1 is between owners; try again' },
          }
        : { storedBytes: 42 };
    response.writeHead(status, headers).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // Waits pass on a manual clock, at once: the test sees the delays without sleeping them.
  let nowMs = 0;
  const clock = { now: () => nowMs };
  const slept: number[] = [];
  const sleep = async (delayMs: number) => {
    slept.push(delayMs);
    nowMs += delayMs;
  };
  const admin = new AdminApi(parseBrokerEndpoint(`ws://127.0.0.1:${port}`), undefined, {
    retry: { sleep, clock, random: () => 0.5 },
  });
  return { admin, requests, slept };
}

describe('AdminApi: a 503 (a queue between owners) is retried', () => {
  it('makes an idempotent request again after a backoff until the broker answers', async () => {
    const { admin, requests, slept } = await adminAnsweringInTurn([503, 503, 200]);
    expect(await admin.put('/v1/groups/orders', { maxRetries: 2 })).toEqual({ storedBytes: 42 });
    expect(requests).toEqual(['PUT /v1/groups/orders', 'PUT /v1/groups/orders', 'PUT /v1/groups/orders']);
    expect(slept).toEqual([250, 500]);
  });

  it('honours Retry-After, and fails UNAVAILABLE with the broker’s message once the attempts are spent', async () => {
    const { admin, requests, slept } = await adminAnsweringInTurn([503], '1');
    const failure = await admin.call('GET /v1/store', '/v1/store').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CliError);
    expect(failure).toMatchObject({
      exit: 'UNAVAILABLE',
      message: 'the broker is unavailable: queue 1 is between owners; try again',
    });
    expect(requests).toHaveLength(4);
    expect(slept).toEqual([1_000, 1_000, 1_000]);
  });

  it('does not make a redrive again: a repeat could redrive what the first one took', async () => {
    const { admin, requests, slept } = await adminAnsweringInTurn([503, 200]);
    const failure = await admin.post('/v1/groups/orders/dlq/redrive', {}).catch((error: unknown) => error);
    expect(failure).toMatchObject({ exit: 'UNAVAILABLE' });
    expect(requests).toEqual(['POST /v1/groups/orders/dlq/redrive']);
    expect(slept).toEqual([]);
  });
});
