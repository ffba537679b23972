import { FAST_BACKOFF, fakeBrokerPerTest, nextStatus } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { ClientError } from './client-error.js';
import { Connection } from './connection.js';

const brokers = fakeBrokerPerTest((connection: Connection) => connection.close({ drainTimeoutMs: 0 }));

/** ws reading at most 1 KiB, so a small frame is past this client's limit. */
class SmallPayloadWebSocket extends WebSocket {
  constructor(url: string, protocols: string | string[]) {
    super(url, protocols, { maxPayload: 1024 });
  }
}

describe('a link closed for an oversize frame (1009)', () => {
  it('tells onProtocolError that the broker sent more than the client reads, and reconnects', async () => {
    const fake = await brokers.start();
    const reported: ClientError[] = [];
    const connection = brokers.track(
      new Connection({
        endpoint: fake.endpoint,
        reconnectBackoff: FAST_BACKOFF,
        webSocket: SmallPayloadWebSocket,
        onProtocolError: (error) => reported.push(error),
      }),
    );
    await connection.connect();
    const reconnected = nextStatus(connection, (status) => status.state === 'connected');
    fake.sessions[0]?.sendRaw(new Uint8Array(4096));
    await reconnected;
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'PROTOCOL_ERROR' });
    expect(reported[0]?.message).toMatch(/the broker sent a frame larger than this client reads.*1009/);
  });

  it('tells onProtocolError when the broker closed the link for a frame of the client', async () => {
    const fake = await brokers.start();
    const reported: ClientError[] = [];
    const connection = brokers.track(
      new Connection({
        endpoint: fake.endpoint,
        reconnectBackoff: FAST_BACKOFF,
        onProtocolError: (e) => reported.push(e),
      }),
    );
    await connection.connect();
    const reconnected = nextStatus(connection, (status) => status.state === 'connected');
    fake.sessions[0]?.close(1009, 'frame too large');
    await reconnected;
    expect(reported.map((error) => error.message)).toEqual([
      expect.stringMatching(
        /closed the connection for a frame of this client larger than it reads: frame too large/,
      ),
    ]);
  });
});
