import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { noOwnerYet } from './no-owner.test-support.js';
import { type StandbyRelay, startStandbyRelay } from './standby-relay.js';

const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * A stand-in owner: echoes every frame back, prefixed, and records the subprotocol it was offered.
 * Started `paused`, it reads nothing until `resume()`.
 */
async function startEchoOwner(
  options: { paused?: boolean } = {},
): Promise<{ url: string; protocols: string[]; resume: () => void }> {
  const waiting: WebSocket[] = [];
  let paused = options.paused === true;
  const protocols: string[] = [];
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: (offered) => {
      protocols.push(...offered);
      return WEBSOCKET_SUBPROTOCOL;
    },
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (socket) => {
    if (paused) {
      socket.pause();
      waiting.push(socket);
    }
    socket.on('message', (data, binary) =>
      socket.send(Buffer.concat([Buffer.from('echo:'), data as Buffer]), { binary }),
    );
  });
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  );
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    protocols,
    resume: () => {
      paused = false;
      for (const socket of waiting.splice(0)) socket.resume();
    },
  };
}

/** A stand-in owner's HTTP side on `port`: answers 201 with the method, URL and body it got. */
async function startBodyEchoServer(port: number): Promise<Server> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      response.writeHead(201, { 'content-type': 'application/json', 'x-owner': 'yes' });
      response.end(JSON.stringify({ method: request.method, url: request.url, body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return server;
}

/** A server that accepts every connection and closes it unanswered: the port's new tenant. */
async function startHangUpServer(): Promise<string> {
  const server = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startRelay(
  findOwner: () => Promise<string | undefined>,
  ownerWaitMs?: number,
): Promise<StandbyRelay> {
  const relay = await startStandbyRelay({
    host: '127.0.0.1',
    port: 0,
    // Above the 1 MiB frames (and their echoes) of the backpressure test.
    maxFrameBytes: 16 * 1024 * 1024,
    findOwner,
    ...(ownerWaitMs === undefined ? {} : { ownerWaitMs }),
  });
  closers.push(() => relay.close());
  return relay;
}

/** Connect to the relay and resolve with how the connection went: frames received and its close. */
function connect(url: string, protocol: string | undefined, send?: Buffer) {
  const socket = new WebSocket(`${url}/v1/ws`, protocol === undefined ? [] : [protocol]);
  const frames: string[] = [];
  return {
    socket,
    frames,
    opened: new Promise<void>((resolve, reject) => {
      socket.once('open', () => {
        if (send) socket.send(send);
        resolve();
      });
      socket.once('unexpected-response', (_request, response) =>
        reject(new Error(`HTTP ${response.statusCode}`)),
      );
    }),
    received: (count: number) =>
      new Promise<string[]>((resolve) => {
        socket.on('message', (data) => {
          frames.push(String(data));
          if (frames.length >= count) resolve(frames);
        });
      }),
    closed: new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    ),
  };
}

describe('standby relay', () => {
  it('relays a client to the owner, frames both ways, with the ricochet.v1 subprotocol', async () => {
    const owner = await startEchoOwner();
    const relay = await startRelay(async () => owner.url);
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL, Buffer.from('hello'));
    const received = client.received(2);
    await client.opened;
    client.socket.send(Buffer.from('second'));
    expect(await received).toEqual(['echo:hello', 'echo:second']);
    expect(owner.protocols).toEqual([WEBSOCKET_SUBPROTOCOL]);
    client.socket.close();
  });

  it('relays a fast client to an owner that reads nothing for a while, every frame in order, once it reads again', async () => {
    const owner = await startEchoOwner({ paused: true });
    const relay = await startRelay(async () => owner.url);
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL);
    await client.opened;
    // 128 MiB in 1 MiB frames, far past the relay's 4 MiB high-water mark: the relay stops reading
    // the client, and must start again once the owner drains what it holds.
    const frames = 128;
    const received = client.received(frames);
    let written = 0;
    for (let i = 0; i < frames; i++) {
      client.socket.send(Buffer.alloc(1024 * 1024, i), () => {
        written++;
      });
    }
    owner.resume();
    const echoed = await received;
    expect(echoed).toHaveLength(frames);
    expect(echoed.map((frame) => frame.charCodeAt(5))).toEqual([...Array(frames).keys()]);
    expect(written).toBe(frames);
    client.socket.close();
  }, 30_000); // 256 MiB through loopback twice, on a loaded 2-core machine: its own budget

  it('holds a client while no owner can be reached, and relays it to the first that can', async () => {
    const owner = await startEchoOwner();
    // A takeover: first nobody, then an owner named whose listener is not up (refused), then the owner.
    const answers = [undefined, undefined, 'ws://127.0.0.1:1', owner.url];
    const relay = await startRelay(async () => (answers.length > 1 ? answers.shift() : answers[0]));
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL, Buffer.from('hello'));
    const received = client.received(1);
    await client.opened;
    expect(await received).toEqual(['echo:hello']);
    client.socket.close();
  });

  it('closes a held client with 1013 once no broker owned the store within the wait, so it reconnects', async () => {
    const relay = await startRelay(async () => undefined, 600);
    const startedAt = performance.now();
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL);
    await client.opened;
    expect(await client.closed).toEqual({
      code: 1013,
      reason: expect.stringMatching(/no broker owns the store/),
    });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(300);
  });

  it('refuses a client that does not offer ricochet.v1, as the broker does', async () => {
    const relay = await startRelay(async () => 'ws://127.0.0.1:1');
    await expect(connect(relay.url, undefined).opened).rejects.toThrow('HTTP 400');
  });

  it('answers /healthz with 503 standby and the owner, so load balancers skip it', async () => {
    const relay = await startRelay(async () => 'ws://owner.internal:7720');
    const response = await fetch(`${relay.url.replace(/^ws/, 'http')}/healthz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: 'standby', owner: 'ws://owner.internal:7720' });
  });

  it('forwards the admin API and the HTTP transport to the owner, bodies both ways, but answers /metrics itself', async () => {
    const owner = await startBodyEchoServer(0);
    const ownerUrl = `ws://127.0.0.1:${(owner.address() as AddressInfo).port}`;
    const relay = await startRelay(async () => ownerUrl);
    const http = relay.url.replace(/^ws/, 'http');
    const answer = await fetch(`${http}/v1/frames?session=1`, { method: 'POST', body: 'frames' });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-owner')).toBe('yes');
    expect(await answer.json()).toEqual({ method: 'POST', url: '/v1/frames?session=1', body: 'frames' });
    const metrics = await fetch(`${http}/metrics`);
    expect(metrics.status).toBe(503);
    expect(await metrics.json()).toEqual({ status: 'standby', owner: ownerUrl });
  });

  it("keeps the owner's connection headers to itself: the client learns the relay's own keep-alive", async () => {
    // The broker's HTTP server (Fastify's) keeps idle connections 72 s; the relay's, 5 s.
    const owner = await startBodyEchoServer(0);
    owner.keepAliveTimeout = 72_000;
    const ownerUrl = `ws://127.0.0.1:${(owner.address() as AddressInfo).port}`;
    const relay = await startRelay(async () => ownerUrl);
    const answer = await fetch(`${relay.url.replace(/^ws/, 'http')}/v1/frames`, {
      method: 'POST',
      body: 'frames',
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-owner')).toBe('yes');
    expect(answer.headers.get('keep-alive')).toBe('timeout=5');
    await answer.arrayBuffer();
  });

  it('holds an HTTP request while no owner can be reached, and forwards it, body and all, to the first that can', async () => {
    const owner = await startBodyEchoServer(0);
    const ownerUrl = `ws://127.0.0.1:${(owner.address() as AddressInfo).port}`;
    // A dead owner's port taken by another process, which accepts and hangs up: not an owner.
    const stranger = await startHangUpServer();
    const answers = [undefined, undefined, 'ws://127.0.0.1:1', stranger, ownerUrl];
    const relay = await startRelay(async () => (answers.length > 1 ? answers.shift() : answers[0]));
    const answer = await fetch(`${relay.url.replace(/^ws/, 'http')}/v1/frames`, {
      method: 'POST',
      body: 'frames',
    });
    expect(answer.status).toBe(201);
    expect(await answer.json()).toEqual({ method: 'POST', url: '/v1/frames', body: 'frames' });
    expect(answers).toEqual([ownerUrl]);
  });

  it('answers 503 naming the owner when it cannot be reached within the wait', async () => {
    const relay = await startRelay(async () => 'ws://127.0.0.1:1', 600);
    const answer = await fetch(`${relay.url.replace(/^ws/, 'http')}/v1/topics`);
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({
      code: 503,
      message: expect.stringMatching(/owner at ws:\/\/127\.0\.0\.1:1 cannot be reached/),
    });
  });

  it('on close, tells relayed clients to reconnect and frees its port', async () => {
    const owner = await startEchoOwner();
    const relay = await startStandbyRelay({
      host: '127.0.0.1',
      port: 0,
      maxFrameBytes: 1024,
      findOwner: async () => owner.url,
    });
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL, Buffer.from('x'));
    const received = client.received(1);
    await client.opened;
    await received;
    await relay.close();
    expect((await client.closed).code).toBe(1013);
    // The port is free again: the broker listens on it once it owns the store.
    const again = await startStandbyRelay({
      host: '127.0.0.1',
      port: relay.port,
      maxFrameBytes: 1024,
      findOwner: async () => undefined,
    });
    await again.close();
  });

  it('hands the upgrades it holds to the broker taking its port over, which answers them as its own', async () => {
    const lookup = noOwnerYet();
    const relay = await startRelay(lookup.findOwner);
    let upgraded = false;
    const client = connect(relay.url, WEBSOCKET_SUBPROTOCOL, Buffer.from('hello'));
    void client.opened.then(() => {
      upgraded = true;
    });
    const received = client.received(1);
    // Held: no owner, so the upgrade is not answered.
    await lookup.lookedUp;
    expect(upgraded).toBe(false);
    await relay.stopListening();
    // This broker now owns the store and listens on the same port.
    const broker = createServer();
    const sockets = new WebSocketServer({ noServer: true, handleProtocols: () => WEBSOCKET_SUBPROTOCOL });
    sockets.on('connection', (socket) =>
      socket.on('message', (data) => socket.send(Buffer.concat([Buffer.from('mine:'), data as Buffer]))),
    );
    broker.on('upgrade', (request, socket, head) =>
      sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws, request)),
    );
    await new Promise<void>((resolve) => broker.listen(relay.port, '127.0.0.1', () => resolve()));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const ws of sockets.clients) ws.terminate();
          broker.close(() => resolve());
        }),
    );
    relay.handOver({
      upgrade: (request, socket, head) => broker.emit('upgrade', request, socket, head),
      request: (request, response) => broker.emit('request', request, response),
    });
    expect(await received).toEqual(['mine:hello']);
    client.socket.close();
  });

  it('hands the HTTP requests it holds to the broker taking its port over, bodies unread until then', async () => {
    const lookup = noOwnerYet();
    const relay = await startRelay(lookup.findOwner);
    const answer = fetch(`${relay.url.replace(/^ws/, 'http')}/v1/frames`, { method: 'POST', body: 'frames' });
    await lookup.lookedUp;
    await relay.stopListening();
    const broker = await startBodyEchoServer(relay.port);
    relay.handOver({
      upgrade: (_request, socket) => socket.destroy(),
      request: (request, response) => broker.emit('request', request, response),
    });
    const response = await answer;
    expect(response.status).toBe(201);
    // Answered on the relay's connection, which closes after it: the next request goes to the broker.
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toEqual({ method: 'POST', url: '/v1/frames', body: 'frames' });
  });

  it('answers 503 to an upgrade past maxConnections, counting the clients it holds', async () => {
    const lookup = noOwnerYet();
    const relay = await startStandbyRelay({
      host: '127.0.0.1',
      port: 0,
      maxFrameBytes: 1024,
      maxConnections: 1,
      findOwner: lookup.findOwner,
    });
    closers.push(() => relay.close());
    const first = connect(relay.url, WEBSOCKET_SUBPROTOCOL);
    first.socket.on('error', () => {});
    // The first is held (no owner): the second finds the relay full.
    await lookup.lookedUp;
    await expect(connect(relay.url, WEBSOCKET_SUBPROTOCOL).opened).rejects.toThrow('HTTP 503');
    first.socket.terminate();
  });
});
