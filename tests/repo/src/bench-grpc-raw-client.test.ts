import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { constants, createServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { grpcFrame, RawGrpcClient } from '../../../bench/src/grpc-load/grpc-raw-client.js';

/**
 * The bench's gRPC load generator frames HTTP/2 by hand; here it talks to `node:http2`'s server
 * (nghttp2, the same stack the broker's gRPC server runs on) with the server's limits set low, so
 * every rule it must keep is exercised: the stream limit, flow control both ways, refused streams.
 */

const SERVICE = '/apache.rocketmq.v2.MessagingService/';

interface TestServer {
  readonly endpoint: string;
  /** Paths of the streams the server saw, refused ones included. */
  readonly seen: string[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/**
 * `Echo` answers its request's messages, `Big` answers 200 kB (past HTTP/2's default window),
 * `Fail` answers trailers-only with grpc-status 13; the first `refuse` streams are refused.
 */
async function startServer(options: {
  maxConcurrentStreams: number;
  initialWindowSize: number;
  refuse?: number;
}) {
  const seen: string[] = [];
  let refuse = options.refuse ?? 0;
  let open = 0;
  let mostOpen = 0;
  const big = randomBytes(200_000);
  const server = createServer({
    settings: {
      maxConcurrentStreams: options.maxConcurrentStreams,
      initialWindowSize: options.initialWindowSize,
    },
  });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const path = String(headers[':path']);
    seen.push(path);
    // A refused stream's close is reported as its error.
    stream.on('error', () => undefined);
    if (refuse > 0) {
      refuse--;
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    open++;
    mostOpen = Math.max(mostOpen, open);
    stream.once('close', () => open--);
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => {
      // Answered a turn later, so streams overlap and the stream limit is reached.
      setImmediate(() => {
        if (path === `${SERVICE}Fail`) {
          stream.respond(
            { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '13', 'grpc-message': 'no' },
            { endStream: true },
          );
          return;
        }
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(path === `${SERVICE}Big` ? grpcFrame(big) : Buffer.concat(chunks));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const handle: TestServer & { readonly big: Buffer; mostOpen(): number } = {
    endpoint: `127.0.0.1:${port}`,
    seen,
    big,
    mostOpen: () => mostOpen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  servers.push(handle);
  return handle;
}

describe('the gRPC load generator (bench/src/grpc-load/grpc-raw-client.ts)', () => {
  it('answers every call with its own answer under a small stream limit and a small window', async () => {
    const server = await startServer({ maxConcurrentStreams: 8, initialWindowSize: 1_024 });
    await using client = await RawGrpcClient.connect(server.endpoint, 2, 'test');
    // 3 kB requests: each waits for WINDOW_UPDATE frames twice on its stream, and 200 of them
    // pass the connection's 64 kB window too.
    const requests = Array.from({ length: 200 }, (_, index) =>
      grpcFrame(Buffer.concat([Buffer.from(`request ${index} `), randomBytes(3_000)])),
    );
    const answers = await Promise.all(requests.map((request) => client.call('Echo', request)));
    answers.forEach((messages, index) => {
      expect(messages).toHaveLength(1);
      expect(grpcFrame(messages[0] as Buffer).equals(requests[index] as Buffer)).toBe(true);
    });
    expect(server.mostOpen()).toBeLessThanOrEqual(2 * 8);
    expect(server.mostOpen()).toBeGreaterThan(2);
    expect(server.seen.every((path) => path === `${SERVICE}Echo`)).toBe(true);
  });

  it('reads an answer larger than HTTP/2’s default window, several in a row', async () => {
    const server = await startServer({ maxConcurrentStreams: 100, initialWindowSize: 65_535 });
    await using client = await RawGrpcClient.connect(server.endpoint, 1, 'test');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => client.call('Big', grpcFrame(Buffer.from('give')))),
    );
    for (const messages of answers) expect(messages[0]?.equals(server.big)).toBe(true);
  });

  it('sends a refused stream again and counts it; fails a call answered without a message', async () => {
    const server = await startServer({ maxConcurrentStreams: 100, initialWindowSize: 65_535, refuse: 3 });
    await using client = await RawGrpcClient.connect(server.endpoint, 1, 'test');
    const request = grpcFrame(Buffer.from('again'));
    const [answer] = await client.call('Echo', request);
    expect(answer?.toString()).toBe('again');
    expect(client.refusals).toBe(3);
    expect(server.seen).toHaveLength(4);
    await expect(client.call('Fail', request)).rejects.toThrow(/without a message/);
    // The connection goes on after a failed call.
    expect((await client.call('Echo', request))[0]?.toString()).toBe('again');
  });
});
