import { once } from 'node:events';
import { type ClientHttp2Session, connect, constants, type IncomingHttpHeaders } from 'node:http2';
import { createServer, type Server } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { frameMessage, GRPC_STATUS, MessageReader } from './grpc-framing.js';
import { type GrpcHandler, type GrpcMethodCodec, GrpcServer } from './grpc-server.js';
import type { GrpcCall } from './grpc-stream-call.js';

/** Requests and answers are UTF-8 text: the server's codec is the caller's to choose. */
const text = (path: string, requestStream = false, responseStream = false): GrpcMethodCodec => ({
  path,
  requestStream,
  responseStream,
  requestDeserialize: (bytes) => {
    const value = bytes.toString('utf8');
    if (value === 'not a request') throw new Error('unreadable');
    return value;
  },
  responseSerialize: (value: string) => Buffer.from(value, 'utf8'),
});

interface Answer {
  readonly headers: IncomingHttpHeaders;
  readonly trailers: IncomingHttpHeaders;
  readonly messages: string[];
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function serve(handlers: Record<string, GrpcHandler>, now = () => 1_000): Promise<ClientHttp2Session> {
  const server = new GrpcServer({
    methods: {
      Echo: text('/t.S/Echo'),
      Count: text('/t.S/Count', false, true),
      Chat: text('/t.S/Chat', true, true),
    },
    handlers,
    maxMessageBytes: 64,
    maxConcurrentStreams: 16,
    onHandlerError: () => undefined,
    now,
  });
  const listener: Server = createServer((socket) => server.serve(socket));
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const address = listener.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const client = connect(`http://127.0.0.1:${port}`);
  stops.push(async () => {
    client.destroy();
    await server.close(100);
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });
  await once(client, 'connect');
  return client;
}

/** One call: `body` framed (each string one message), read to its end. */
function call(
  client: ClientHttp2Session,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const stream = client.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...headers,
  });
  stream.end(body);
  return new Promise((resolve, reject) => {
    let answerHeaders: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const reader = new MessageReader(1024);
    const messages: string[] = [];
    stream.on('response', (received) => {
      answerHeaders = received;
    });
    stream.on('trailers', (received) => {
      trailers = received;
    });
    stream.on('data', (chunk: Buffer) => {
      for (const message of reader.push(chunk)) messages.push(message.bytes.toString('utf8'));
    });
    stream.on('error', reject);
    stream.on('close', () => resolve({ headers: answerHeaders, trailers, messages }));
  });
}

const framed = (...messages: string[]) => Buffer.concat(messages.map((m) => frameMessage(Buffer.from(m))));
/** The status of an answer: in its trailers, or in its headers when it had only those. */
const statusOf = (answer: Answer) => Number(answer.trailers['grpc-status'] ?? answer.headers['grpc-status']);

describe('GrpcServer', () => {
  it('answers a unary call with its message and OK, and gives the handler headers and deadline', async () => {
    const seen: { deadlineMs: number; client: string | undefined }[] = [];
    const client = await serve({
      Echo: {
        kind: 'unary',
        handle: (request: string, grpcCall: GrpcCall) => {
          seen.push({ deadlineMs: grpcCall.deadlineMs, client: grpcCall.header('x-mq-client-id') });
          return Promise.resolve(`echo ${request}` as unknown as object);
        },
      },
    });
    const answer = await call(client, '/t.S/Echo', framed('hi'), {
      'grpc-timeout': '250m',
      'x-mq-client-id': 'c1',
    });
    expect(answer.messages).toEqual(['echo hi']);
    expect(statusOf(answer)).toBe(GRPC_STATUS.OK);
    expect(answer.headers['content-type']).toBe('application/grpc');
    expect(seen).toEqual([{ deadlineMs: 1_250, client: 'c1' }]);
  });

  it('inflates a gzip-compressed request', async () => {
    const client = await serve({
      Echo: { kind: 'unary', handle: (request: string) => Promise.resolve(request as unknown as object) },
    });
    const compressed = frameMessage(gzipSync(Buffer.from('packed')));
    compressed[0] = 1;
    const answer = await call(client, '/t.S/Echo', compressed, { 'grpc-encoding': 'gzip' });
    expect(answer.messages).toEqual(['packed']);
  });

  it('answers an unknown method UNIMPLEMENTED, an oversize message RESOURCE_EXHAUSTED, unreadable bytes INTERNAL, without calling the handler', async () => {
    let handled = 0;
    const client = await serve({
      Echo: {
        kind: 'unary',
        handle: () => {
          handled++;
          return Promise.resolve('' as unknown as object);
        },
      },
    });
    expect(statusOf(await call(client, '/t.S/Nope', framed('x')))).toBe(GRPC_STATUS.UNIMPLEMENTED);
    expect(statusOf(await call(client, '/t.S/Echo', framed('x'.repeat(65))))).toBe(
      GRPC_STATUS.RESOURCE_EXHAUSTED,
    );
    expect(statusOf(await call(client, '/t.S/Echo', framed('not a request')))).toBe(GRPC_STATUS.INTERNAL);
    expect(statusOf(await call(client, '/t.S/Echo', framed('a', 'b')))).toBe(GRPC_STATUS.UNIMPLEMENTED);
    expect(handled).toBe(0);
    // The connection still serves.
    expect(statusOf(await call(client, '/t.S/Echo', framed('fine')))).toBe(GRPC_STATUS.OK);
    expect(handled).toBe(1);
  });

  it('streams a server-streaming answer, and ends a streaming call with no message trailers-only', async () => {
    const client = await serve({
      Count: {
        kind: 'serverStream',
        handle: (request: string, _call: GrpcCall, out) => {
          for (let i = 1; i <= Number(request); i++) out.write(String(i) as never);
          out.end();
        },
      },
    });
    expect((await call(client, '/t.S/Count', framed('3'))).messages).toEqual(['1', '2', '3']);
    const empty = await call(client, '/t.S/Count', framed('0'));
    expect(empty.messages).toEqual([]);
    expect(empty.headers['grpc-status']).toBe('0');
  });

  it('hands a bidirectional call each message in order and its end; a reset stream is cancelled', async () => {
    const received: string[] = [];
    let cancelled = 0;
    const client = await serve({
      Chat: {
        kind: 'bidi',
        handle: (grpcCall: GrpcCall, out) => {
          grpcCall.onCancelled(() => cancelled++);
          return {
            message: (request: string) => {
              received.push(request);
              out.write(`re ${request}` as never);
            },
            end: () => out.end(),
          };
        },
      },
    });
    const answer = await call(client, '/t.S/Chat', framed('a', 'b', 'c'));
    expect(received).toEqual(['a', 'b', 'c']);
    expect(answer.messages).toEqual(['re a', 're b', 're c']);
    expect(statusOf(answer)).toBe(GRPC_STATUS.OK);
    expect(cancelled).toBe(0);

    const open = client.request({
      ':method': 'POST',
      ':path': '/t.S/Chat',
      'content-type': 'application/grpc',
    });
    open.write(framed('d'));
    await new Promise<void>((resolve) => open.once('data', () => resolve()));
    // As a gRPC client cancels a call.
    open.close(constants.NGHTTP2_CANCEL);
    await once(open, 'close');
    await expect.poll(() => cancelled).toBe(1);
  });
});
