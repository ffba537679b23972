import { ManualClock } from '@ricochet/core';
import { type BrokerFrame, type ClientFrame, decodeBrokerFrame, encodeFrame } from '@ricochet/protocol';
import { Registry } from 'prom-client';
import { AccessControl } from '../auth/access-control.js';
import type { MessagingService } from '../engine/index.js';
import { ConnectionLimits } from './connection-limits.js';
import type { FrameChannel, FrameChannelListener } from './frame-channel.js';
import { InboundBudget } from './frame-inbox.js';
import type { QueueMapFeed } from './queue-map-feed.js';
import { Session } from './session.js';

const silent = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** A channel in memory: what the session sends, decoded, in order; whether its reading is paused. */
export class MemoryChannel implements FrameChannel {
  open = true;
  paused = false;
  readonly sent: BrokerFrame[] = [];
  listener: FrameChannelListener | undefined;
  send(frame: Uint8Array): void {
    const decoded = decodeBrokerFrame(frame);
    if (!decoded.ok) throw new Error(decoded.error.message);
    this.sent.push(decoded.frame);
  }
  close(): void {
    this.open = false;
    this.listener?.onClose();
  }
  listen(listener: FrameChannelListener): void {
    this.listener = listener;
  }
  pauseReading(): void {
    this.paused = true;
  }
  resumeReading(): void {
    this.paused = false;
  }
  receive(frame: ClientFrame): void {
    this.listener?.onFrame(encodeFrame(frame));
  }
}

/**
 * A session over a {@link MemoryChannel}, with generous per-connection caps and no
 * authentication. Its frames are handled as they arrive, whatever the loop's budget (an unbounded
 * `inbound`), unless the test gives the budget its frames should be held by.
 */
export function openMemorySession(
  engine: MessagingService,
  options: { readonly queueMap?: QueueMapFeed | undefined; readonly inbound?: InboundBudget } = {},
) {
  const registry = new Registry();
  const channel = new MemoryChannel();
  const session = new Session(channel, {
    engine,
    log: silent as never,
    access: new AccessControl({ authFile: undefined, registry, log: silent, clock: new ManualClock(0) }),
    helloTimeoutMs: 60_000,
    maxBodyBytes: 1_024,
    maxFrameBytes: 65_536,
    accepting: () => true,
    limits: new ConnectionLimits(
      {
        maxConnections: 10,
        maxInflightRequestsPerConnection: 10,
        maxWaitingReceivesPerConnection: 10,
        maxSubscriptionsPerConnection: 10,
      },
      registry,
    ),
    queueMap: options.queueMap,
    inbound: options.inbound ?? new InboundBudget(Number.POSITIVE_INFINITY),
  });
  return { channel, session };
}
