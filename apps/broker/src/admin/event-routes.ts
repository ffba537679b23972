import type { ServerResponse } from 'node:http';
import { BROKER_EVENT_TYPES, type BrokerEvent, type BrokerEventType } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import { z } from 'zod';
import type { Principal } from '../auth/auth-file.js';
import { mayReadGroup } from '../auth/permissions.js';
import type { EngineEvent } from '../engine/index.js';
import { describeDeadLetter } from './dead-letter-routes.js';
import { principalOf } from './http-access.js';
import { replyInvalidBody } from './http-error.js';

/**
 * What a listener may have waiting while its socket does not take them (besides what the socket
 * itself buffers): this many events, and this many bytes of them (a `dead_lettered` event carries
 * its message's body, up to `maxBodyBytes`); past either it is dropped.
 */
export const MAX_BUFFERED_EVENTS = 1_000;
/** See {@link MAX_BUFFERED_EVENTS}: 16 MiB. */
export const MAX_BUFFERED_EVENT_BYTES = 16 * 1024 * 1024;

const eventQuerySchema = z.object({
  type: z.enum(BROKER_EVENT_TYPES).optional(),
  group: z.string().min(1).max(120).optional(),
});

/** One `GET /v1/events` response: what it wants, and what waits for its socket. */
interface Listener {
  readonly response: ServerResponse;
  readonly type: BrokerEventType | undefined;
  readonly group: string | undefined;
  readonly principal: Principal | undefined;
  /** Frames its socket has not taken yet (it signalled backpressure), oldest first. */
  readonly waiting: string[];
  /** Their size in bytes. */
  waitingBytes: number;
}

export interface EventStreamOptions {
  /** Where the dropped-listener count and the listener gauge go: the broker's metrics. */
  readonly registry: Registry;
  /** @default {@link MAX_BUFFERED_EVENT_BYTES} (16 MiB) */
  readonly maxBufferedBytes?: number;
}

/**
 * X7: the broker's events as server-sent events. The engine calls {@link publish} (its
 * `EngineEventSink`) synchronously; each event is written once as an SSE frame and handed to every
 * listener whose filters (type, group) and principal (the groups it may read) accept it. A listener
 * whose socket takes the frame at once costs nothing more; one whose socket signals backpressure
 * gets the frame queued, up to {@link MAX_BUFFERED_EVENTS} and `maxBufferedBytes`, and is dropped (its response ended, the count
 * in `ricochet_events_listeners_dropped_total`) when it would exceed it. Nothing here ever waits
 * for a listener: the engine never slows for one.
 */
export class EventStream {
  readonly #listeners = new Set<Listener>();
  readonly #maxBufferedBytes: number;
  readonly #dropped: Counter;

  constructor(options: EventStreamOptions) {
    this.#maxBufferedBytes = options.maxBufferedBytes ?? MAX_BUFFERED_EVENT_BYTES;
    const registers = [options.registry];
    this.#dropped = new Counter({
      name: 'ricochet_events_listeners_dropped_total',
      help: 'Listeners of GET /v1/events dropped because they fell behind (their buffer of events was full)',
      registers,
    });
    const listeners = this.#listeners;
    new Gauge({
      name: 'ricochet_events_listeners',
      help: 'Listeners of GET /v1/events connected now',
      registers,
      collect() {
        this.set(listeners.size);
      },
    });
  }

  /** The engine's sink: hand `event` to every listener that wants it. Never blocks, never throws. */
  readonly publish = (event: EngineEvent): void => {
    if (this.#listeners.size === 0) return;
    const wire = toBrokerEvent(event);
    let frame: string | undefined;
    for (const listener of this.#listeners) {
      if (listener.type !== undefined && listener.type !== wire.type) continue;
      if (listener.group !== undefined && listener.group !== wire.group) continue;
      if (listener.principal !== undefined && !mayReadGroup(listener.principal, wire.group)) continue;
      frame ??= `event: ${wire.type}\ndata: ${JSON.stringify(wire)}\n\n`;
      this.#send(listener, frame);
    }
  };

  /** End every stream (the broker is closing). */
  close(): void {
    for (const listener of this.#listeners) listener.response.end();
    this.#listeners.clear();
  }

  /** Follow `response` as a listener until it closes. */
  listen(response: ServerResponse, filter: Omit<Listener, 'response' | 'waiting' | 'waitingBytes'>): void {
    const listener: Listener = { ...filter, response, waiting: [], waitingBytes: 0 };
    this.#listeners.add(listener);
    response.on('close', () => this.#listeners.delete(listener));
    response.on('drain', () => this.#flush(listener));
  }

  #send(listener: Listener, frame: string): void {
    if (listener.waiting.length === 0 && !listener.response.writableNeedDrain) {
      listener.response.write(frame);
      return;
    }
    const bytes = Buffer.byteLength(frame);
    if (
      listener.waiting.length >= MAX_BUFFERED_EVENTS ||
      listener.waitingBytes + bytes > this.#maxBufferedBytes
    ) {
      // Fallen behind: dropped, so that its buffer stays bounded and no one waits for it.
      this.#listeners.delete(listener);
      this.#dropped.inc();
      listener.response.destroy();
      return;
    }
    listener.waiting.push(frame);
    listener.waitingBytes += bytes;
  }

  #flush(listener: Listener): void {
    while (listener.waiting.length > 0) {
      const frame = listener.waiting.shift() ?? '';
      listener.waitingBytes -= Buffer.byteLength(frame);
      if (!listener.response.write(frame)) return;
    }
  }
}

/** The engine's event as the wire shows it: a DLQ copy becomes its entry as the DLQ listing gives it. */
function toBrokerEvent(event: EngineEvent): BrokerEvent {
  if (event.type !== 'dead_lettered') return event;
  const { copy, ...rest } = event;
  return { ...rest, entry: describeDeadLetter(copy, false) };
}

/**
 * `GET /v1/events?type=&group=` (X7): a `text/event-stream` of {@link EventStream}'s events, those
 * of `type` and `group` when given, and with an auth file only those of the groups the principal
 * may read. A comment line opens the stream, so a client knows it is listening.
 */
export function registerEventRoutes(app: FastifyInstance, stream: EventStream): void {
  app.get('/v1/events', (request, reply) => {
    const query = eventQuerySchema.safeParse(request.query);
    if (!query.success) return replyInvalidBody(reply, query.error);
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    response.write(': ricochet events\n\n');
    stream.listen(response, {
      type: query.data.type,
      group: query.data.group,
      principal: principalOf(request),
    });
    return reply;
  });
}
