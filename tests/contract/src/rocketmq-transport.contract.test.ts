import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectHttp2, constants } from 'node:http2';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually } from './support/push.js';
import { startRocketBroker } from './support/rocketmq.js';
import { rawRocketClient, rocketMessage, simpleReceive } from './support/rocketmq-raw.js';
import { counterValue } from './support/security.js';
import type { TestBroker } from './support/test-broker.js';
import { createTestCertificateAuthority, issueServerCertificate } from './support/test-certificate.js';

const directory = mkdtempSync(join(tmpdir(), 'ricochet-grpc-tls-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** The gRPC status a raw HTTP/2 request to `path` with `body` is answered with. */
function rawGrpcCall(endpoints: string, path: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = connectHttp2(`http://${endpoints}`);
    session.on('error', reject);
    const request = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status = -1;
    request.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
    });
    request.on('trailers', (trailers) => {
      status = Number(trailers['grpc-status']);
    });
    request.on('close', () => {
      session.close();
      resolve(status);
    });
    request.on('data', () => {});
    request.end(body);
  });
}

const HTTP2_GOAWAY = 0x7;

/** Whether an HTTP/2 connection to `endpoints` is served: true once the server's SETTINGS arrive. */
function http2Admitted(endpoints: string): Promise<boolean> {
  return new Promise((resolve) => {
    const session = connectHttp2(`http://${endpoints}`);
    session.once('remoteSettings', () => {
      session.close();
      resolve(true);
    });
    session.once('error', () => resolve(false));
    session.once('close', () => resolve(false));
  });
}

/** Whether a WebSocket session to `endpoint` opens (false: its upgrade was refused). */
function websocketAdmitted(endpoint: string): Promise<boolean> {
  const socket = new WebSocket(`${endpoint}${WEBSOCKET_PATH}`, [WEBSOCKET_SUBPROTOCOL]);
  return new Promise((resolve) => {
    socket.once('open', () => {
      socket.close();
      resolve(true);
    });
    socket.once('unexpected-response', (_request, response) => {
      response.resume();
      socket.terminate();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The broker's /metrics text. */
async function metricsOf(broker: TestBroker): Promise<string> {
  return (await broker.admin.fetch('GET', '/metrics')).text();
}

/** The open client connections the broker counts against --max-connections (an unlabelled gauge). */
async function openConnections(broker: TestBroker): Promise<number> {
  const line = (await metricsOf(broker))
    .split('\n')
    .find((row) => row.startsWith('ricochet_websocket_connections '));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** The types of the HTTP/2 frames in `bytes` (each: 3 bytes length, 1 type, 1 flags, 4 stream id). */
function frameTypesOf(bytes: Buffer): number[] {
  const types: number[] = [];
  for (let offset = 0; offset + 9 <= bytes.length && types.length < 100; ) {
    types.push(bytes[offset + 3] ?? -1);
    offset += 9 + bytes.readUIntBE(offset, 3);
  }
  return types;
}

describe('the RocketMQ port: plaintext and TLS on one port, and bad input', () => {
  it('serves TLS and plaintext clients on the same port, as the RocketMQ proxy does', async () => {
    const ca = createTestCertificateAuthority();
    const pair = issueServerCertificate(ca, ['127.0.0.1', 'localhost']);
    const certPath = join(directory, 'broker.crt');
    const keyPath = join(directory, 'broker.key');
    writeFileSync(certPath, pair.certPem);
    writeFileSync(keyPath, pair.keyPem);
    await using rocket = await startRocketBroker({ tlsCert: certPath, tlsKey: keyPath });
    using secure = rawRocketClient(rocket.endpoints, 'tls-client', { ca: ca.certPem });
    using plain = rawRocketClient(rocket.endpoints, 'plain-client');
    const overTls = await secure.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('tls'))],
    });
    const overPlain = await plain.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('h2c'))],
    });
    expect([overTls.status.code, overPlain.status.code]).toEqual(['OK', 'OK']);
    expect([overTls.entries[0].offset, overPlain.entries[0].offset]).toEqual([0, 1]);
  });

  it('garbage bytes, a broken protobuf and an oversize frame disturb no other client and store nothing', async () => {
    await using rocket = await startRocketBroker();
    using bystander = rawRocketClient(rocket.endpoints, 'bystander');
    // Not HTTP/2 at all: answered with a GOAWAY, and nothing else happens.
    const garbage = connect(Number(rocket.endpoints.split(':')[1]), '127.0.0.1');
    garbage.write(Buffer.from('\x01\x02 not a preface, not a TLS record'.repeat(20)));
    const answer = await new Promise<Buffer>((resolve) => garbage.once('data', resolve));
    garbage.destroy();
    expect(frameTypesOf(answer)).toContain(HTTP2_GOAWAY);
    // A gRPC frame whose protobuf cannot be read: INTERNAL (13), from grpc-js's decoding.
    const broken = Buffer.concat([Buffer.from([0, 0, 0, 0, 4]), Buffer.from([0x0a, 0xff, 0xff, 0xff])]);
    expect(
      await rawGrpcCall(rocket.endpoints, '/apache.rocketmq.v2.MessagingService/SendMessage', broken),
    ).toBe(13);
    // A frame that claims more than the broker reads: RESOURCE_EXHAUSTED (8).
    const oversize = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
    expect(
      await rawGrpcCall(rocket.endpoints, '/apache.rocketmq.v2.MessagingService/SendMessage', oversize),
    ).toBe(8);
    // An RPC no service has: UNIMPLEMENTED (12).
    expect(
      await rawGrpcCall(rocket.endpoints, '/apache.rocketmq.v2.MessagingService/Nope', Buffer.alloc(5)),
    ).toBe(12);
    expect((await rocket.broker.admin.listTopics()).topics).toEqual([]);
    const sent = await bystander.unary('SendMessage', {
      messages: [rocketMessage('orders', Buffer.from('fine'))],
    });
    expect(sent.status.code).toBe('OK');
  });

  it('a connection past its waiting receives is answered TOO_MANY_REQUESTS; another connection is not', async () => {
    await using rocket = await startRocketBroker({ maxWaitingReceivesPerConnection: 2 });
    using greedy = rawRocketClient(rocket.endpoints, 'greedy');
    using other = rawRocketClient(rocket.endpoints, 'other');
    const poll = simpleReceive('billing', 'orders', 30_000, 1_000);
    const statusOf = async (client: typeof greedy) =>
      (await client.stream('ReceiveMessage', poll)).find((frame) => frame.status)?.status.code;
    const codes = await Promise.all([statusOf(greedy), statusOf(greedy), statusOf(greedy), statusOf(other)]);
    expect(codes.slice(0, 3).sort()).toEqual(['MESSAGE_NOT_FOUND', 'MESSAGE_NOT_FOUND', 'TOO_MANY_REQUESTS']);
    expect(codes[3]).toBe('MESSAGE_NOT_FOUND');
    // Counted where every transport's refusals are.
    const metrics = await metricsOf(rocket.broker);
    expect(
      counterValue(metrics, 'ricochet_limit_rejections_total', 'limit="maxWaitingReceivesPerConnection"'),
    ).toBe(1);
  });

  it('gRPC connections count against --max-connections with WebSocket ones, in the same metric', async () => {
    await using rocket = await startRocketBroker({ maxConnections: 2 });
    const { endpoint } = rocket.broker;
    using holder = rawRocketClient(rocket.endpoints, 'holder');
    expect((await holder.unary('Heartbeat', {})).status.code).toBe('OK');
    const websocket = new WebSocket(`${endpoint}${WEBSOCKET_PATH}`, [WEBSOCKET_SUBPROTOCOL]);
    await new Promise((resolve, reject) => websocket.once('open', resolve).once('error', reject));
    expect(await openConnections(rocket.broker)).toBe(2);
    // Full, whatever the transport of the one more.
    expect(await http2Admitted(rocket.endpoints)).toBe(false);
    expect(await websocketAdmitted(endpoint)).toBe(false);
    const metrics = await metricsOf(rocket.broker);
    expect(counterValue(metrics, 'ricochet_limit_rejections_total', 'limit="maxConnections"')).toBe(2);
    // The connections it holds still work.
    expect((await holder.unary('Heartbeat', {})).status.code).toBe('OK');
    // One gone, a gRPC connection is admitted again.
    websocket.close();
    await eventually(
      () => http2Admitted(rocket.endpoints),
      (admitted) => admitted,
    );
  });
});
