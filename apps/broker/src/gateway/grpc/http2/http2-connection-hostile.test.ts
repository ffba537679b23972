import { once } from 'node:events';
import { connect as connectSocket, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeHeaderBlock } from './hpack.js';
import { Http2ServerConnection } from './http2-connection.js';
import { CLIENT_PREFACE, FLAG, FRAME_TYPE, frameOf, H2_ERROR, SETTING } from './http2-frames.js';
import { collectFrames, goAwayCodeOf } from './raw-frames.test-support.js';

/**
 * A client that breaks HTTP/2 on purpose, in raw frames: each breach ends its own connection with
 * GOAWAY and the code RFC 9113 names, and a well-behaved connection beside it is served on.
 */

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/**
 * A server that answers every request `:status 200` once it ended, with at most 4 streams open,
 * 100 kB held of requests not yet ended, and 10 streams reset at once (then one a second).
 */
async function serve(): Promise<number> {
  const connections: Http2ServerConnection[] = [];
  const answer = encodeHeaderBlock([[':status', '200']]);
  const listener: Server = createServer((socket) => {
    connections.push(
      new Http2ServerConnection(socket, {
        now: () => performance.now(),
        maxConcurrentStreams: 4,
        maxHeaderListBytes: 65_536,
        maxRefusedStreamsInARow: 10,
        maxHeldBytes: 100_000,
        streamResets: { burst: 10, perSecond: 1 },
        onStream: (stream) => {
          // As the gRPC server's reader does: a request is held until it is whole (its end here).
          let held = 0;
          stream.listeners = {
            data: (chunk) => {
              held += chunk.length;
              stream.holding(held);
            },
            end: () => {
              stream.holding(0);
              stream.respond(answer, true);
            },
            close: () => undefined,
          };
        },
        onClose: () => undefined,
      }),
    );
  });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  stops.push(async () => {
    for (const connection of connections) connection.destroy();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });
  const address = listener.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** A connection past its preface and SETTINGS, reading every frame the server sends. */
async function rawClient(port: number) {
  const socket: Socket = connectSocket(port, '127.0.0.1');
  await once(socket, 'connect');
  const received = collectFrames(socket);
  // Writes after the server ended the connection fail; the test reads what it answered.
  socket.on('error', () => undefined);
  const closed = once(socket, 'close');
  socket.write(Buffer.concat([CLIENT_PREFACE, frameOf(FRAME_TYPE.SETTINGS, 0, 0)]));
  stops.push(async () => {
    socket.destroy();
  });
  return {
    socket,
    received,
    /** The GOAWAY's code once the server ended the connection. */
    async goAwayCode(): Promise<number | undefined> {
      await closed;
      return goAwayCodeOf(received);
    },
  };
}

const request = encodeHeaderBlock([
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/x'],
  [':authority', 'test'],
]);

function setting(id: number, value: number): Buffer {
  const payload = Buffer.alloc(6);
  payload.writeUInt16BE(id, 0);
  payload.writeUInt32BE(value, 2);
  return frameOf(FRAME_TYPE.SETTINGS, 0, 0, payload);
}

function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(increment, 0);
  return frameOf(FRAME_TYPE.WINDOW_UPDATE, 0, streamId, payload);
}

describe('Http2ServerConnection against a hostile client', () => {
  it('ends a header block past 256 KiB in CONTINUATION frames: ENHANCE_YOUR_CALM', async () => {
    const port = await serve();
    const client = await rawClient(port);
    client.socket.write(frameOf(FRAME_TYPE.HEADERS, 0, 1, request));
    const junk = Buffer.alloc(16_000, 0x40);
    for (let frame = 0; frame < 20 && !client.socket.destroyed; frame++) {
      client.socket.write(frameOf(FRAME_TYPE.CONTINUATION, 0, 1, junk));
    }
    expect(await client.goAwayCode()).toBe(H2_ERROR.ENHANCE_YOUR_CALM);
  });

  it('refuses streams past its limit with REFUSED_STREAM, and ends a flood of them', async () => {
    const port = await serve();
    const client = await rawClient(port);
    // Four streams held open (no END_STREAM), then refusals until the flood limit.
    const frames: Buffer[] = [];
    for (let stream = 1; stream <= 4 + 11; stream++) {
      frames.push(frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS, stream * 2 - 1, request));
    }
    client.socket.write(Buffer.concat(frames));
    expect(await client.goAwayCode()).toBe(H2_ERROR.ENHANCE_YOUR_CALM);
    const refused = client.received.filter(
      (frame) =>
        frame.type === FRAME_TYPE.RST_STREAM && frame.payload.readUInt32BE(0) === H2_ERROR.REFUSED_STREAM,
    );
    expect(refused).toHaveLength(11);
    expect(refused[0]?.streamId).toBe(9);
  });

  it('ends a rapid reset (streams opened and reset at once) past its budget: ENHANCE_YOUR_CALM', async () => {
    const port = await serve();
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(H2_ERROR.CANCEL, 0);
    const openAndReset = (count: number, firstStream: number) =>
      Buffer.concat(
        Array.from({ length: count }, (_, index) => {
          const stream = firstStream + index * 2;
          return Buffer.concat([
            frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS, stream, request),
            frameOf(FRAME_TYPE.RST_STREAM, 0, stream, cancel),
          ]);
        }),
      );
    // Within the budget, cancelling is what clients do: the connection still serves.
    const polite = await rawClient(port);
    polite.socket.write(openAndReset(10, 1));
    polite.socket.write(frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 21, request));
    await expect.poll(() => polite.received.some((frame) => frame.type === FRAME_TYPE.HEADERS)).toBe(true);
    expect(goAwayCodeOf(polite.received)).toBeUndefined();
    // Past it, with the stream limit (4) never met: the connection ends.
    const attacker = await rawClient(port);
    attacker.socket.write(openAndReset(50, 1));
    expect(await attacker.goAwayCode()).toBe(H2_ERROR.ENHANCE_YOUR_CALM);
  });

  it('ends a connection whose unfinished requests hold past its bound: ENHANCE_YOUR_CALM', async () => {
    const port = await serve();
    const client = await rawClient(port);
    // Three streams of 40 kB each, none ended: 120 kB held, past the 100 kB bound.
    const frames: Buffer[] = [];
    for (const stream of [1, 3, 5]) {
      frames.push(frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS, stream, request));
      frames.push(frameOf(FRAME_TYPE.DATA, 0, stream, Buffer.alloc(10_000)));
      frames.push(frameOf(FRAME_TYPE.DATA, 0, stream, Buffer.alloc(10_000)));
      frames.push(frameOf(FRAME_TYPE.DATA, 0, stream, Buffer.alloc(10_000)));
      frames.push(frameOf(FRAME_TYPE.DATA, 0, stream, Buffer.alloc(10_000)));
    }
    client.socket.write(Buffer.concat(frames));
    expect(await client.goAwayCode()).toBe(H2_ERROR.ENHANCE_YOUR_CALM);

    // Requests that end let go of what they held: the same bytes, one stream after another, pass.
    const steady = await rawClient(port);
    for (const stream of [1, 3, 5]) {
      steady.socket.write(
        Buffer.concat([
          frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS, stream, request),
          ...Array.from({ length: 4 }, () => frameOf(FRAME_TYPE.DATA, 0, stream, Buffer.alloc(10_000))),
          frameOf(FRAME_TYPE.DATA, FLAG.END_STREAM, stream, Buffer.alloc(0)),
        ]),
      );
      await expect
        .poll(() =>
          steady.received.some((frame) => frame.type === FRAME_TYPE.HEADERS && frame.streamId === stream),
        )
        .toBe(true);
    }
    expect(steady.received.some((frame) => frame.type === FRAME_TYPE.GOAWAY)).toBe(false);
  });

  it('ends a connection for windows past 2^31-1 and settings out of range', async () => {
    const port = await serve();
    const windowSetting = await rawClient(port);
    windowSetting.socket.write(setting(SETTING.INITIAL_WINDOW_SIZE, 2 ** 31));
    expect(await windowSetting.goAwayCode()).toBe(H2_ERROR.FLOW_CONTROL_ERROR);

    const frameSize = await rawClient(port);
    frameSize.socket.write(setting(SETTING.MAX_FRAME_SIZE, 1_000));
    expect(await frameSize.goAwayCode()).toBe(H2_ERROR.PROTOCOL_ERROR);

    const overflow = await rawClient(port);
    overflow.socket.write(Buffer.concat([windowUpdate(0, 2 ** 31 - 1), windowUpdate(0, 2 ** 31 - 1)]));
    expect(await overflow.goAwayCode()).toBe(H2_ERROR.FLOW_CONTROL_ERROR);

    const evenStream = await rawClient(port);
    evenStream.socket.write(frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 2, request));
    expect(await evenStream.goAwayCode()).toBe(H2_ERROR.PROTOCOL_ERROR);
  });

  it('serves a well-behaved connection beside one that breaks the protocol', async () => {
    const port = await serve();
    const bystander = await rawClient(port);
    const breaker = await rawClient(port);
    breaker.socket.write(frameOf(FRAME_TYPE.PUSH_PROMISE, FLAG.END_HEADERS, 1, Buffer.alloc(4)));
    expect(await breaker.goAwayCode()).toBe(H2_ERROR.PROTOCOL_ERROR);
    bystander.socket.write(frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, request));
    await expect
      .poll(() =>
        bystander.received.some((frame) => frame.type === FRAME_TYPE.HEADERS && frame.streamId === 1),
      )
      .toBe(true);
  });
});
