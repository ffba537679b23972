import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { encodeFrame, PROTOCOL_VERSION } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpTransport } from './http-transport.js';
import type { LinkCloseEvent } from './transport.js';

/** A server that answers every POST with `answer`, recording what it was sent. */
async function startServer(answer: { status: number; type: string; body: Uint8Array | string }) {
  const requests: { url: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  servers.push(server);
  return { url: new URL(`http://127.0.0.1:${address.port}/prefix/`), requests };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** Send one frame on a new link; resolve with the first thing the link tells. */
async function exchange(endpoint: URL, frame: Uint8Array) {
  const link = await new HttpTransport(endpoint, undefined).connect({ signal: new AbortController().signal });
  const told = new Promise<{ frame?: Uint8Array; close?: LinkCloseEvent }>((resolve) => {
    link.listen({
      onFrame: (bytes) => resolve({ frame: bytes }),
      onUnreadable: () => {},
      onClose: (event) => resolve({ close: event }),
    });
  });
  link.send(frame);
  return told;
}

const hello = encodeFrame({ type: 'hello', protocolVersion: PROTOCOL_VERSION, token: 's3cret' });

describe('HttpTransport', () => {
  it('POSTs each frame as MessagePack under the path prefix, with the hello’s token as Bearer, and hands the answer up', async () => {
    const welcome = encodeFrame({
      type: 'welcome',
      protocolVersion: PROTOCOL_VERSION,
      sessionId: 's',
      maxBodyBytes: 1,
      maxFrameBytes: 1,
    });
    const server = await startServer({ status: 200, type: 'application/msgpack', body: welcome });
    const told = await exchange(server.url, hello);
    expect(told.frame && [...told.frame]).toEqual([...welcome]);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      url: '/prefix/v1/frames',
      headers: { 'content-type': 'application/msgpack', authorization: 'Bearer s3cret' },
    });
    expect([...(server.requests[0]?.body ?? [])]).toEqual([...hello]);
  });

  it('ends the link (1006) on an answer that is not a frame, such as a proxy’s error page', async () => {
    const server = await startServer({ status: 502, type: 'text/html', body: '<h1>Bad Gateway</h1>' });
    const told = await exchange(server.url, hello);
    expect(told.close).toMatchObject({
      code: 1006,
      reason: expect.stringContaining('HTTP 502 without a frame'),
    });
  });

  it('ends the link (1006) with the cause when nothing answers', async () => {
    const server = await startServer({ status: 200, type: 'application/msgpack', body: '' });
    const endpoint = server.url;
    await new Promise<void>((resolve) => (servers.pop() as Server).close(() => resolve()));
    const told = await exchange(endpoint, hello);
    expect(told.close).toMatchObject({ code: 1006, reason: expect.stringContaining('failed') });
    expect(told.close?.error).toBeDefined();
  });
});
