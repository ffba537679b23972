import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { noOwnerYet } from './no-owner.test-support.js';
import { startStandbyTcpRelay } from './standby-tcp-relay.js';

const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A stand-in owner's TCP listener: echoes every byte back. */
async function startEchoOwner(): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return `tcp://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Connect, write `text`, and resolve with what came back before the connection ended or `expected` bytes arrived. */
function exchange(port: number, text: string, expected: number): Promise<{ answer: string; ended: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.length >= expected) {
        socket.destroy();
        resolve({ answer, ended: false });
      }
    });
    socket.on('close', () => resolve({ answer, ended: true }));
    socket.on('error', () => {});
    socket.write(text);
  });
}

describe('standby TCP relay', () => {
  it('pipes a connection to the owner’s TCP listener, byte for byte, both ways', async () => {
    const owner = await startEchoOwner();
    const relay = await startStandbyTcpRelay({ host: '127.0.0.1', port: 0, findOwner: async () => owner });
    closers.push(() => relay.close());
    expect(await exchange(relay.port, 'hello over tcp', 14)).toEqual({
      answer: 'hello over tcp',
      ended: false,
    });
  });

  it('holds a connection while no owner serves TCP, and pipes it to the first that does', async () => {
    const owner = await startEchoOwner();
    // A takeover: first nobody, then an owner named whose listener is not up (refused), then the owner.
    const answers = [undefined, undefined, 'tcp://127.0.0.1:1', owner];
    const relay = await startStandbyTcpRelay({
      host: '127.0.0.1',
      port: 0,
      findOwner: async () => (answers.length > 1 ? answers.shift() : answers[0]),
    });
    closers.push(() => relay.close());
    expect(await exchange(relay.port, 'held, then relayed', 18)).toEqual({
      answer: 'held, then relayed',
      ended: false,
    });
  });

  it('closes a held connection once no owner served TCP within the wait, so the client reconnects', async () => {
    const relay = await startStandbyTcpRelay({
      host: '127.0.0.1',
      port: 0,
      findOwner: async () => undefined,
      ownerWaitMs: 600,
    });
    closers.push(() => relay.close());
    const startedAt = performance.now();
    expect(await exchange(relay.port, 'anyone?', 1)).toEqual({ answer: '', ended: true });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(300);
  });

  it('on close, cuts relayed connections and frees its port', async () => {
    const owner = await startEchoOwner();
    const relay = await startStandbyTcpRelay({ host: '127.0.0.1', port: 0, findOwner: async () => owner });
    const socket = connect(relay.port, '127.0.0.1');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    await relay.close();
    await closed;
    const again = await startStandbyTcpRelay({
      host: '127.0.0.1',
      port: relay.port,
      findOwner: async () => undefined,
    });
    await again.close();
  });

  it('hands the connections it holds to the broker taking its port over, unread', async () => {
    const lookup = noOwnerYet();
    const relay = await startStandbyTcpRelay({ host: '127.0.0.1', port: 0, findOwner: lookup.findOwner });
    closers.push(() => relay.close());
    const answer = exchange(relay.port, 'hello before the takeover', 25);
    // Held: no owner to pipe it to.
    await lookup.lookedUp;
    await relay.stopListening();
    // This broker now owns the store and listens on the same port: an echo.
    const sockets = new Set<Socket>();
    const broker = createServer((socket) => {
      sockets.add(socket);
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => broker.listen(relay.port, '127.0.0.1', () => resolve()));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          broker.close(() => resolve());
        }),
    );
    relay.handOver((socket) => broker.emit('connection', socket));
    expect(await answer).toEqual({ answer: 'hello before the takeover', ended: false });
  });
});
