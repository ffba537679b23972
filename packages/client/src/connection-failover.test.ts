import { type AddressInfo, createServer, type Server } from 'node:net';
import {
  FAST_BACKOFF,
  FakeBroker,
  type FakeBrokerOptions,
  nextStatus,
  recordStatuses,
  rejectionOf,
} from '@ricochet/client-testkit';
import type { SendFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { Connection } from './connection.js';
import type { ConnectionOptions } from './connection-options.js';

// Several brokers per test, so not fakeBrokerPerTest (one broker): connections close first, then
// the brokers and the dead endpoints.
const connections: Connection[] = [];
const brokers: FakeBroker[] = [];
const deadServers: Server[] = [];

afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close({ drainTimeoutMs: 0 })));
  await Promise.all(brokers.splice(0).map((broker) => broker.close()));
  await Promise.all(
    deadServers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
});

async function startBroker(options: FakeBrokerOptions = {}): Promise<FakeBroker> {
  const broker = await FakeBroker.start(options);
  brokers.push(broker);
  return broker;
}

/**
 * An endpoint where no broker answers: a port of 127.0.0.1 that resets every connection at once.
 * It stays bound until the test ends: a port merely closed could be handed to the next server the
 * test starts (the live broker), which then answered in the dead one's place.
 */
async function deadEndpoint(scheme: 'ws' | 'tcp'): Promise<string> {
  const server = createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  deadServers.push(server);
  const { port } = server.address() as AddressInfo;
  return `${scheme}://127.0.0.1:${port}`;
}

function connect(endpoint: readonly string[], options: Partial<ConnectionOptions> = {}): Connection {
  const connection = new Connection({
    endpoint,
    reconnectBackoff: FAST_BACKOFF,
    onProtocolError: () => {},
    ...options,
  });
  connections.push(connection);
  return connection;
}

function send(messageId: string): Omit<SendFrame, 'id'> {
  return { type: 'send', messages: [{ messageId, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }] };
}

describe('several endpoints (failover)', () => {
  it('connects to the live broker after the dead endpoint before it fails, whatever its scheme', async () => {
    const dead = await deadEndpoint('tcp');
    const live = await startBroker();
    const connection = connect([dead, live.endpoint]);
    const recording = recordStatuses(connection);
    await connection.connect();
    expect(connection.session?.endpoint).toBe(live.endpoint);
    expect(live.connectionCount).toBe(1);
    expect(recording.statuses).toMatchObject([
      { state: 'connecting' },
      { state: 'reconnecting', attempt: 2, delayMs: 5, error: { code: 'CONNECTION_CLOSED' } },
      { state: 'connected', sessionId: 'session-1', endpoint: live.endpoint },
    ]);
    const [, failed] = recording.statuses;
    expect(failed?.state === 'reconnecting' && failed.error?.message).toContain(dead);
  });

  it('walks the list in order and wraps around, each attempt after a backoff wait', async () => {
    const dead = await deadEndpoint('ws');
    let refusals = 1;
    const live = await startBroker({
      onHello: () => (refusals-- > 0 ? { code: 503, message: 'starting' } : undefined),
    });
    const connection = connect([dead, live.endpoint]);
    const recording = recordStatuses(connection);
    await connection.connect();
    // dead (refused), live (503), dead again (refused), live (welcome).
    expect(recording.statuses).toMatchObject([
      { state: 'connecting' },
      { state: 'reconnecting', attempt: 2, delayMs: 5, error: { code: 'CONNECTION_CLOSED' } },
      { state: 'reconnecting', attempt: 3, delayMs: 10, error: { code: 503 } },
      { state: 'reconnecting', attempt: 4, delayMs: 20, error: { code: 'CONNECTION_CLOSED' } },
      { state: 'connected', sessionId: 'session-1', endpoint: live.endpoint },
    ]);
    expect(live.connectionCount).toBe(2);
    expect(connection.session?.endpoint).toBe(live.endpoint);
  });

  it('fails over to B when the broker of its session stops, and B answers the requests queued meanwhile', async () => {
    const a = await startBroker();
    const b = await startBroker();
    const connection = connect([a.endpoint, b.endpoint]);
    await connection.connect();
    expect(connection.session?.endpoint).toBe(a.endpoint);
    const disconnected = nextStatus(connection, 'disconnected');
    const recording = recordStatuses(connection);
    await a.close();
    await disconnected;
    const answer = connection.request(send('queued'));
    await expect(answer).resolves.toMatchObject({ receipts: [{ messageId: 'queued' }] });
    expect(b.framesOf('send').flatMap((frame) => frame.messages.map((m) => m.messageId))).toEqual(['queued']);
    expect(a.framesOf('send')).toEqual([]);
    expect(connection.session).toMatchObject({ endpoint: b.endpoint, sessionId: 'session-1' });
    // The first attempt went to A again (refused: it stopped), the second to B.
    expect(recording.statuses).toMatchObject([
      { state: 'disconnected', error: { code: 'CONNECTION_CLOSED' } },
      { state: 'reconnecting', attempt: 1 },
      { state: 'reconnecting', attempt: 2, error: { code: 'CONNECTION_CLOSED' } },
      { state: 'connected', sessionId: 'session-1', endpoint: b.endpoint },
    ]);
  });

  it('retries the same endpoint first after a dropped session, without touching the others', async () => {
    const a = await startBroker();
    const b = await startBroker();
    const connection = connect([a.endpoint, b.endpoint]);
    await connection.connect();
    for (const sessionNumber of [1, 2]) {
      const reconnected = nextStatus(connection, 'connected');
      a.dropAll();
      expect(await reconnected).toEqual({
        state: 'connected',
        sessionId: `session-${sessionNumber + 1}`,
        endpoint: a.endpoint,
      });
    }
    expect(connection.session?.endpoint).toBe(a.endpoint);
    expect(a.sessions).toHaveLength(3);
    expect(b.connectionCount).toBe(0);
  });

  it('closes on a fatal handshake refusal, whichever endpoint gave it, without trying the others', async () => {
    const refusing = await startBroker({ onHello: () => ({ code: 401, message: 'who are you' }) });
    const live = await startBroker();
    const connection = connect([refusing.endpoint, live.endpoint]);
    const error = await rejectionOf(connection.connect());
    expect(error).toMatchObject({ code: 401, retryable: false });
    expect(connection.currentStatus).toEqual({ state: 'closed', error });
    expect(live.connectionCount).toBe(0);
  });
});

describe('the endpoint option', () => {
  it('takes one endpoint as a list of one', async () => {
    const live = await startBroker();
    const connection = connect([live.endpoint]);
    await connection.connect();
    expect(connection.session?.endpoint).toBe(live.endpoint);
  });

  it('refuses an empty list with 400', () => {
    expect(() => new Connection({ endpoint: [] })).toThrow(
      new ClientError(400, 'endpoint is an empty list: give at least one broker endpoint'),
    );
  });

  it('refuses a list with a bad entry with 400, naming the entry', () => {
    expect(() => new Connection({ endpoint: ['ws://127.0.0.1:1', 'ftp://127.0.0.1:2'] })).toThrow(
      new ClientError(
        400,
        "endpoint 'ftp://127.0.0.1:2' must start with ws://, wss://, tcp://, tls://, http://, https://",
      ),
    );
    expect(() => new Connection({ endpoint: ['not a url', 'ws://127.0.0.1:1'] })).toThrow(
      /^endpoint 'not a url' is not a URL$/,
    );
  });

  it('applies requireStream to every entry', () => {
    expect(
      () => new Connection({ endpoint: ['tcp://127.0.0.1:1', 'http://127.0.0.1:2'], requireStream: true }),
    ).toThrow(
      new ClientError(
        400,
        "endpoint 'http://127.0.0.1:2' is request/response; this client needs a stream: ws://, wss://, tcp:// or tls://",
      ),
    );
    expect(
      () => new Connection({ endpoint: ['ws://127.0.0.1:1', 'tcp://127.0.0.1:2'], requireStream: true }),
    ).not.toThrow();
  });
});
