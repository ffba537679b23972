import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { type ClientHttp2Session, connect, constants, type IncomingHttpHeaders } from 'node:http2';
import { connect as connectSocket, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeHeaderBlock } from './hpack.js';
import { Http2ServerConnection } from './http2-connection.js';
import { CLIENT_PREFACE, FLAG, FRAME_TYPE, frameOf, H2_ERROR } from './http2-frames.js';
import type { Http2ServerStream, StreamEnd } from './http2-stream.js';
import { collectFrames, goAwayCodeOf } from './raw-frames.test-support.js';

/**
 * The hand-framed HTTP/2 server against `node:http2`'s client (nghttp2: Huffman-coded, indexed
 * headers, its own flow control), and against raw bytes for what a client must not do.
 */

const ANSWER_HEADERS = encodeHeaderBlock([[':status', '200']]);
const TRAILERS = encodeHeaderBlock([['x-done', 'yes']]);

interface Served {
  readonly port: number;
  readonly ends: StreamEnd[];
  readonly connections: Http2ServerConnection[];
  mostOpen(): number;
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/**
 * Streams answered by their `:path`: `/echo` sends the request body back once it ended, `/big`
 * sends `size` random bytes (the request's `x-size`), `/three` writes three parts in one turn,
 * `/later` echoes 50 ms after the request ended, `/hold` answers nothing until reset.
 */
async function serve(
  options: { maxConcurrentStreams?: number; maxHeaderListBytes?: number } = {},
): Promise<Served> {
  const ends: StreamEnd[] = [];
  const connections: Http2ServerConnection[] = [];
  let open = 0;
  let mostOpen = 0;
  const onStream = (stream: Http2ServerStream) => {
    open++;
    mostOpen = Math.max(mostOpen, open);
    const chunks: Buffer[] = [];
    stream.listeners = {
      data: (chunk) => chunks.push(Buffer.from(chunk)),
      end: () => {
        const path = stream.header(':path');
        if (path === '/hold') return;
        // A turn later, so streams overlap; `/later` 50 ms later, so a test sees it open.
        const answerLater = path === '/later' ? (answer: () => void) => setTimeout(answer, 50) : setImmediate;
        answerLater(() => {
          stream.respond(ANSWER_HEADERS, false);
          if (path === '/three')
            for (const part of ['one ', 'two ', 'three']) stream.write(Buffer.from(part));
          else
            stream.write(
              path === '/big' ? randomBytes(Number(stream.header('x-size'))) : Buffer.concat(chunks),
            );
          stream.end(TRAILERS);
        });
      },
      close: (end) => {
        open--;
        ends.push(end);
      },
    };
  };
  const listener: Server = createServer((socket) => {
    connections.push(
      new Http2ServerConnection(socket, {
        now: () => performance.now(),
        maxConcurrentStreams: options.maxConcurrentStreams ?? 100,
        maxHeaderListBytes: options.maxHeaderListBytes ?? 65_536,
        maxRefusedStreamsInARow: 100,
        maxHeldBytes: 64 * 1_048_576,
        onStream,
        onClose: () => undefined,
      }),
    );
  });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const address = listener.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  stops.push(async () => {
    for (const connection of connections) connection.destroy();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });
  return { port, ends, connections, mostOpen: () => mostOpen };
}

async function client(port: number): Promise<ClientHttp2Session> {
  const session = connect(`http://127.0.0.1:${port}`);
  stops.push(async () => {
    session.destroy();
  });
  await once(session, 'connect');
  return session;
}

interface Answer {
  readonly headers: IncomingHttpHeaders;
  readonly trailers: IncomingHttpHeaders;
  readonly body: Buffer;
}

function request(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
) {
  const stream = session.request({ ':method': 'POST', ':path': path, ...headers });
  stream.end(body);
  return new Promise<Answer>((resolve, reject) => {
    let answerHeaders: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (received) => {
      answerHeaders = received;
    });
    stream.on('trailers', (received) => {
      trailers = received;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('close', () => resolve({ headers: answerHeaders, trailers, body: Buffer.concat(chunks) }));
  });
}

/** Raw bytes to the server; resolves with the frames' types it answered until it closed. */
async function rawExchange(
  port: number,
  bytes: Buffer,
): Promise<{ types: number[]; goAwayCode: number | undefined }> {
  const socket: Socket = connectSocket(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(bytes);
  const frames = collectFrames(socket);
  await once(socket, 'close');
  return { types: frames.map((frame) => frame.type), goAwayCode: goAwayCodeOf(frames) };
}

const clientSettings = frameOf(FRAME_TYPE.SETTINGS, 0, 0);

describe('Http2ServerConnection', () => {
  it('serves many concurrent streams within its stream limit, each its own answer and trailers', async () => {
    const served = await serve({ maxConcurrentStreams: 8 });
    const session = await client(served.port);
    await once(session, 'remoteSettings');
    const bodies = Array.from({ length: 100 }, (_, index) =>
      Buffer.from(`body ${index} ${'x'.repeat(index * 37)}`),
    );
    const answers = await Promise.all(
      bodies.map((body) => request(session, '/echo', body, { 'x-index': 'i' })),
    );
    answers.forEach((answer, index) => {
      expect(answer.headers[':status']).toBe(200);
      expect(answer.body.equals(bodies[index] as Buffer)).toBe(true);
      expect(answer.trailers['x-done']).toBe('yes');
    });
    expect(served.mostOpen()).toBeLessThanOrEqual(8);
    expect(served.ends.every((end) => end.kind === 'finished')).toBe(true);
  });

  it('sends an answer larger than the client’s window as the client grants it, and reads a request larger than its own', async () => {
    const served = await serve();
    const session = await client(served.port);
    const big = await request(session, '/big', Buffer.alloc(0), { 'x-size': String(3_000_000) });
    expect(big.body.length).toBe(3_000_000);
    const upload = randomBytes(5_000_000);
    const echoed = await request(session, '/echo', upload);
    expect(echoed.body.equals(upload)).toBe(true);
  });

  it('answers PING, tells a stream the client reset, and ends gracefully with GOAWAY after the streams in flight', async () => {
    const served = await serve();
    const session = await client(served.port);
    await new Promise<void>((resolve, reject) =>
      session.ping((error) => (error ? reject(error) : resolve())),
    );

    const held = session.request({ ':method': 'POST', ':path': '/hold' });
    held.end();
    await expect.poll(() => served.connections[0]?.streamCount).toBe(1);
    held.close(constants.NGHTTP2_CANCEL);
    await expect.poll(() => served.ends).toEqual([{ kind: 'reset', code: H2_ERROR.CANCEL }]);

    const inFlight = request(session, '/later', Buffer.from('still answered'));
    await expect.poll(() => served.connections[0]?.streamCount).toBe(1);
    const goaway = once(session, 'goaway');
    const closed = served.connections[0]?.close();
    expect((await goaway)[0]).toBe(H2_ERROR.NO_ERROR);
    expect((await inFlight).body.toString()).toBe('still answered');
    await closed;
  });

  it('stops reading a client that leaves its answers unread, and reads again once it has read them', async () => {
    const served = await serve();
    const socket: Socket = connectSocket(served.port, '127.0.0.1');
    await once(socket, 'connect');
    // The largest windows HTTP/2 allows, so flow control holds nothing back; then the client
    // reads nothing.
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(0x4, 0);
    settings.writeUInt32BE(2 ** 31 - 1, 2);
    const windowUpdate = Buffer.alloc(4);
    windowUpdate.writeUInt32BE(2 ** 31 - 1 - 65_535, 0);
    socket.pause();
    const requestOf = (streamId: number, size: number) =>
      frameOf(
        FRAME_TYPE.HEADERS,
        FLAG.END_HEADERS | FLAG.END_STREAM,
        streamId,
        encodeHeaderBlock([
          [':method', 'POST'],
          [':scheme', 'http'],
          [':path', '/big'],
          [':authority', 'test'],
          ['x-size', String(size)],
        ]),
      );
    socket.write(
      Buffer.concat([
        CLIENT_PREFACE,
        frameOf(FRAME_TYPE.SETTINGS, 0, 0, settings),
        frameOf(FRAME_TYPE.WINDOW_UPDATE, 0, 0, windowUpdate),
        requestOf(1, 16_000_000),
      ]),
    );
    await expect.poll(() => served.connections[0]?.readingPaused).toBe(true);

    // Once the client reads, the server drains its answer and reads the next request.
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    socket.write(requestOf(3, 10));
    await expect.poll(() => served.ends.length, { timeout: 10_000 }).toBe(2);
    expect(served.connections[0]?.readingPaused).toBe(false);
    socket.destroy();
  });

  it('sends the writes of one turn in one DATA frame, then the trailers', async () => {
    const served = await serve();
    const socket: Socket = connectSocket(served.port, '127.0.0.1');
    await once(socket, 'connect');
    const frames = collectFrames(socket);
    const block = encodeHeaderBlock([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/three'],
      [':authority', 'test'],
    ]);
    socket.write(
      Buffer.concat([
        CLIENT_PREFACE,
        frameOf(FRAME_TYPE.SETTINGS, 0, 0),
        frameOf(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, block),
      ]),
    );
    await expect
      .poll(() => frames.some((frame) => frame.streamId === 1 && frame.flags & FLAG.END_STREAM))
      .toBe(true);
    const ofStream = frames.filter((frame) => frame.streamId === 1);
    expect(ofStream.map((frame) => frame.type)).toEqual([
      FRAME_TYPE.HEADERS,
      FRAME_TYPE.DATA,
      FRAME_TYPE.HEADERS,
    ]);
    expect(ofStream[1]?.payload.toString()).toBe('one two three');
    socket.destroy();
  });

  it('answers 431 to a header list past its limit and goes on serving', async () => {
    const served = await serve({ maxHeaderListBytes: 1_024 });
    const session = await client(served.port);
    const refused = await request(session, '/echo', Buffer.from('x'), { 'x-long': 'y'.repeat(2_000) });
    expect(refused.headers[':status']).toBe(431);
    const fine = await request(session, '/echo', Buffer.from('fine'));
    expect(fine.body.toString()).toBe('fine');
  });

  it('ends a connection that breaks the protocol with GOAWAY and the code', async () => {
    const served = await serve();
    const notHttp2 = await rawExchange(served.port, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(notHttp2.types).toEqual([FRAME_TYPE.SETTINGS, FRAME_TYPE.WINDOW_UPDATE, FRAME_TYPE.GOAWAY]);
    expect(notHttp2.goAwayCode).toBe(H2_ERROR.PROTOCOL_ERROR);

    const dataOnIdle = await rawExchange(
      served.port,
      Buffer.concat([CLIENT_PREFACE, clientSettings, frameOf(FRAME_TYPE.DATA, 0, 5, Buffer.from('x'))]),
    );
    expect(dataOnIdle.goAwayCode).toBe(H2_ERROR.PROTOCOL_ERROR);

    const oversize = Buffer.alloc(9);
    oversize.writeUIntBE(20_000, 0, 3);
    oversize[3] = FRAME_TYPE.DATA;
    const tooLarge = await rawExchange(
      served.port,
      Buffer.concat([CLIENT_PREFACE, clientSettings, oversize]),
    );
    expect(tooLarge.goAwayCode).toBe(H2_ERROR.FRAME_SIZE_ERROR);

    // An index past every table: the block cannot be read.
    const badBlock = frameOf(
      FRAME_TYPE.HEADERS,
      FLAG.END_HEADERS | FLAG.END_STREAM,
      1,
      Buffer.from([0xff, 0x7f]),
    );
    const compression = await rawExchange(
      served.port,
      Buffer.concat([CLIENT_PREFACE, clientSettings, badBlock]),
    );
    expect(compression.goAwayCode).toBe(H2_ERROR.COMPRESSION_ERROR);

    // The server still serves a well-behaved client.
    const session = await client(served.port);
    expect((await request(session, '/echo', Buffer.from('after'))).body.toString()).toBe('after');
  });
});
