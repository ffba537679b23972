import { createServer, type Server, type Socket } from 'node:net';
import {
  encodeStreamClose,
  encodeStreamFrame,
  StreamFrameReader,
  type StreamRecord,
} from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { TcpTransport } from './tcp-transport.js';
import type { LinkCloseEvent, LinkListener } from './transport.js';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A TCP server on a free port that hands each connection to `onSocket`. */
async function serve(onSocket: (socket: Socket) => void): Promise<string> {
  const server = createServer(onSocket);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return `tcp://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
}

/** A listener that records frames and resolves `closed` with the close event. */
function recorder(): LinkListener & { frames: number[][]; closed: Promise<LinkCloseEvent> } {
  let resolveClosed: (event: LinkCloseEvent) => void = () => {};
  const frames: number[][] = [];
  return {
    frames,
    closed: new Promise((resolve) => (resolveClosed = resolve)),
    onFrame: (frame) => frames.push([...frame]),
    onUnreadable: () => {},
    onClose: (event) => resolveClosed(event),
  };
}

const connectOptions = () => ({ signal: new AbortController().signal });

describe('TcpTransport', () => {
  it('carries length-prefixed frames both ways, split anyhow, and reports the close record', async () => {
    const received: StreamRecord[] = [];
    const endpoint = await serve((socket) => {
      const reader = new StreamFrameReader(1024);
      socket.on('data', (chunk) => {
        received.push(...reader.push(chunk));
        if (received.length === 2) {
          const bytes = Buffer.concat([
            encodeStreamFrame(new Uint8Array([1, 2, 3])),
            encodeStreamFrame(new Uint8Array([4])),
            encodeStreamClose(1001, 'going'),
          ]);
          // One byte per write: the client must put the frames back together.
          for (const byte of bytes) socket.write(Buffer.from([byte]));
          socket.end();
        }
      });
    });
    const link = await new TcpTransport(new URL(endpoint), undefined).connect(connectOptions());
    const listener = recorder();
    link.listen(listener);
    link.send(new Uint8Array([9, 9]));
    link.send(new Uint8Array([8]));
    expect(await listener.closed).toEqual({ code: 1001, reason: 'going' });
    expect(listener.frames).toEqual([[1, 2, 3], [4]]);
    expect(received.map((record) => (record.type === 'frame' ? [...record.bytes] : record))).toEqual([
      [9, 9],
      [8],
    ]);
  });

  it('reports 1006 when the broker ends the stream without a close record', async () => {
    const endpoint = await serve((socket) => socket.end());
    const link = await new TcpTransport(new URL(endpoint), undefined).connect(connectOptions());
    const listener = recorder();
    link.listen(listener);
    expect(await listener.closed).toMatchObject({ code: 1006, reason: '' });
  });

  it('closes with its own close record, and the peer reads it', async () => {
    let serverRecords: Promise<StreamRecord[]> = Promise.resolve([]);
    const endpoint = await serve((socket) => {
      serverRecords = new Promise((resolve) => {
        const reader = new StreamFrameReader(1024);
        const records: StreamRecord[] = [];
        socket.on('data', (chunk) => records.push(...reader.push(chunk)));
        socket.on('end', () => {
          socket.end();
          resolve(records);
        });
      });
    });
    const link = await new TcpTransport(new URL(endpoint), undefined).connect(connectOptions());
    await link.close(1000, 'client closed', 5_000);
    expect(await serverRecords).toEqual([{ type: 'close', code: 1000, reason: 'client closed' }]);
  });

  it('fails to connect with the retryable CONNECTION_CLOSED when nothing listens', async () => {
    const endpoint = await serve(() => {});
    await new Promise((resolve) => servers.pop()?.close(resolve));
    await expect(
      new TcpTransport(new URL(endpoint), undefined).connect(connectOptions()),
    ).rejects.toMatchObject({
      code: 'CONNECTION_CLOSED',
      retryable: true,
    });
  });

  it('stops connecting when its signal fires, with the signal’s reason', async () => {
    const endpoint = await serve(() => {});
    const controller = new AbortController();
    const reason = new Error('given up');
    controller.abort(reason);
    await expect(
      new TcpTransport(new URL(endpoint), undefined).connect({ signal: controller.signal }),
    ).rejects.toBe(reason);
  });
});
