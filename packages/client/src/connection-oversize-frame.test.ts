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

/**
 * A connected client of a fake broker that records what reaches `onProtocolError`, and a promise
 * of its next session: what the drop under test leads to.
 */
async function connectRecording(options: { readonly webSocket?: typeof SmallPayloadWebSocket } = {}) {
  const fake = await brokers.start();
  const reported: ClientError[] = [];
  const connection = brokers.track(
    new Connection({
      endpoint: fake.endpoint,
      reconnectBackoff: FAST_BACKOFF,
      ...options,
      onProtocolError: (error) => reported.push(error),
    }),
  );
  await connection.connect();
  const reconnected = nextStatus(connection, (status) => status.state === 'connected');
  return { fake, reported, reconnected };
}

describe('a link closed for an oversize frame (1009)', () => {
  it('tells onProtocolError that the broker sent more than the client reads, and reconnects', async () => {
    const { fake, reported, reconnected } = await connectRecording({ webSocket: SmallPayloadWebSocket });
    fake.sessions[0]?.sendRaw(new Uint8Array(4096));
    await reconnected;
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'PROTOCOL_ERROR' });
    expect(reported[0]?.message).toMatch(/the broker sent a frame larger than this client reads.*1009/);
  });

  it('tells onProtocolError when the broker closed the link for a frame of the client', async () => {
    const { fake, reported, reconnected } = await connectRecording();
    fake.sessions[0]?.close(1009, 'frame too large');
    await reconnected;
    expect(reported.map((error) => error.message)).toEqual([
      expect.stringMatching(
        /closed the connection for a frame of this client larger than it reads: frame too large/,
      ),
    ]);
  });
});
