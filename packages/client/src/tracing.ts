import type * as OtelApi from '@opentelemetry/api';
import type { ReceivedMessage } from './received-message.js';

/**
 * OpenTelemetry tracing of sends and deliveries, through `@opentelemetry/api`, an OPTIONAL peer
 * dependency: an application that installs it (and registers an SDK) gets spans; one that does
 * not pays nothing, since the module is never found and every function here returns `undefined`
 * at once. Only the API's types are imported statically (erased in the build); the module itself
 * is loaded with a dynamic `import()` of a name held in a variable, as `ws` is (web-socket.ts):
 * a bundler leaves it alone, so a bundle builds whether or not the application has the package,
 * and no top-level await makes the client's modules async (which would break `require()` of them
 * from CommonJS on Node 22+). The price is one promise: {@link loadTracing}, which each client
 * awaits on its way to the broker. Nothing of the API's types appears in this module's exports,
 * so the client's declarations typecheck where the package is absent.
 *
 * Spans follow the OpenTelemetry messaging semantic conventions: `send <topic>` (kind PRODUCER)
 * around a producer's send, its retries included, whose context travels in the message's
 * properties through the globally registered propagator (W3C `traceparent`/`tracestate` by
 * default); and one `process <topic>` span (kind CONSUMER) per delivery attempt, linked to the
 * send's context and, since it processes one message, its child too, so a message's attempts
 * are one trace. With no SDK registered no span is started at all (see `currentTracer`), and
 * attributes are set only on recording spans (a sampler may hand out non-recording ones).
 *
 * @see docs/guides/observability.md
 */

/** The messaging system's name, `messaging.system`. */
const SYSTEM = 'ricochet';
/** The instrumentation scope of every span. */
const TRACER_NAME = '@ricochet/client';
/** In a variable so that bundlers do not try to resolve it (see the header). */
const OTEL_API_MODULE: string = '@opentelemetry/api';

/**
 * The attribute names, those of the messaging semantic conventions where they have one. The
 * conventions name no generic delivery attempt: the system-specific name follows
 * `messaging.gcp_pubsub.message.delivery_attempt`.
 */
export const TRACE_ATTRIBUTES = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  messageId: 'messaging.message.id',
  consumerGroup: 'messaging.consumer.group.name',
  bodySize: 'messaging.message.body.size',
  deliveryAttempt: 'messaging.ricochet.message.delivery_attempt',
  outcome: 'messaging.ricochet.outcome',
  sendAttempts: 'messaging.ricochet.send.attempts',
  errorType: 'error.type',
} as const;

/**
 * How a delivery attempt ended, as `messaging.ricochet.outcome` says: processed and committed;
 * failed (retried after the group's delay, or dead-lettered by the broker when it was the last
 * attempt: the client cannot tell); failed with a delay of its own; moved to the DLQ by the
 * consumer.
 */
export type DeliveryOutcome = 'success' | 'failure' | 'retry_after' | 'dead_lettered';

type Api = typeof OtelApi;

/** `undefined` before the first load settles, `null` when the package is not installed. */
let api: Api | null | undefined;
let loading: Promise<void> | undefined;

/**
 * Load `@opentelemetry/api` if the application has it; never rejects. Memoised: the first call
 * starts the import, later ones share it.
 */
export function loadTracing(): Promise<void> {
  loading ??= (import(OTEL_API_MODULE) as Promise<Api>).then(
    (module) => {
      api = module;
    },
    () => {
      api = null;
    },
  );
  return loading;
}

/** Whether {@link loadTracing} has settled, so spans are made (or known not to be) from now on. */
export function isTracingLoaded(): boolean {
  return api !== undefined;
}

/** Whether `@opentelemetry/api` was found; `false` before {@link loadTracing} settles too. */
export function isTracingAvailable(): boolean {
  return api != null;
}

/**
 * The tracer of the registered SDK, or `undefined` when none is registered. The API's global
 * provider is a proxy that delegates to the SDK once one is registered: without a delegate every
 * span would be a no-op, so none is made, for the price of a global read (16–45 ns per message on
 * a loaded 2-core machine; the API's no-op span plus the validity check it needs took 230–410 ns).
 * Asked per span, so an SDK registered after the clients started, or registered anew, is followed.
 */
function currentTracer(loaded: Api): OtelApi.Tracer | undefined {
  const provider = loaded.trace.getTracerProvider();
  if (provider instanceof loaded.ProxyTracerProvider) return provider.getDelegateTracer(TRACER_NAME);
  return provider.getTracer(TRACER_NAME);
}

/** A span that is worth keeping: recording, or carrying a valid context on (a sampled-out one). */
function isLive(loaded: Api, span: OtelApi.Span): boolean {
  return span.isRecording() || loaded.trace.isSpanContextValid(span.spanContext());
}

/**
 * The `send <topic>` span of one message, from `send` until it settles. Made by
 * {@link startSendSpan}. An interface, so that no type of the optional API reaches the client's
 * declarations: they must typecheck where the package is absent.
 */
export interface SendSpan {
  /** The trace context to carry in the message's properties: empty when the propagator adds none. */
  readonly carrier: Readonly<Record<string, string>>;
  /** An attempt failed with `errorType` and the send will try again. */
  retried(attempt: number, errorType: string): void;
  /**
   * End the span: the broker stored the message after `attempts` tries, or the send failed with
   * `error` (its code is the `error.type`).
   */
  end(attempts: number, error?: { readonly code: string | number; readonly message: string }): void;
}

class OtelSendSpan implements SendSpan {
  readonly #api: Api;
  readonly #span: OtelApi.Span;
  /** The trace context to carry in the message's properties: empty when the propagator adds none. */
  readonly carrier: Record<string, string> = {};

  constructor(loaded: Api, span: OtelApi.Span) {
    this.#api = loaded;
    this.#span = span;
    loaded.propagation.inject(loaded.trace.setSpan(loaded.context.active(), span), this.carrier);
  }

  /** An attempt failed with `errorType` and the send will try again. */
  retried(attempt: number, errorType: string): void {
    if (!this.#span.isRecording()) return;
    this.#span.addEvent('ricochet.send.retry', {
      [TRACE_ATTRIBUTES.sendAttempts]: attempt,
      [TRACE_ATTRIBUTES.errorType]: errorType,
    });
  }

  /**
   * End the span: the broker stored the message after `attempts` tries, or the send failed with
   * `error` (its code is the `error.type`).
   */
  end(attempts: number, error?: { readonly code: string | number; readonly message: string }): void {
    const span = this.#span;
    if (span.isRecording()) {
      span.setAttribute(TRACE_ATTRIBUTES.sendAttempts, attempts);
      if (error !== undefined) {
        span.setAttribute(TRACE_ATTRIBUTES.errorType, String(error.code));
        span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: error.message });
      }
    }
    span.end();
  }
}

/**
 * Start the span of a send, in the caller's context, or `undefined` when there is nothing to
 * trace (the API is absent, or no SDK records it and no context is to be carried on).
 */
export function startSendSpan(message: {
  readonly topic: string;
  readonly messageId: string;
  readonly body: Uint8Array;
}): SendSpan | undefined {
  if (api == null) return undefined;
  const tracer = currentTracer(api);
  if (tracer === undefined) return undefined;
  const { topic, messageId } = message;
  const span = tracer.startSpan(`send ${topic}`, { kind: api.SpanKind.PRODUCER });
  if (!isLive(api, span)) return undefined;
  if (span.isRecording()) {
    span.setAttributes({
      [TRACE_ATTRIBUTES.system]: SYSTEM,
      [TRACE_ATTRIBUTES.destination]: topic,
      [TRACE_ATTRIBUTES.operationType]: 'send',
      [TRACE_ATTRIBUTES.operationName]: 'send',
      [TRACE_ATTRIBUTES.messageId]: messageId,
      [TRACE_ATTRIBUTES.bodySize]: message.body.byteLength,
    });
  }
  return new OtelSendSpan(api, span);
}

/** The `process <topic>` span of one delivery attempt. Made by {@link startProcessSpan}. */
export interface ProcessSpan {
  /** Run `work` with this span active, so the spans the application makes inside are its children. */
  run<T>(work: () => T): T;
  /** Record something that happened to the attempt, e.g. a lease change. */
  event(name: string, attributes: Record<string, number | string>): void;
  /**
   * End the attempt with `outcome`; any outcome but `success` sets the span's status to ERROR,
   * with `errorType` as `error.type` and `reason` as the status message. Only the first call counts.
   */
  end(outcome: DeliveryOutcome, errorType?: string, reason?: string): void;
}

class OtelProcessSpan implements ProcessSpan {
  readonly #api: Api;
  readonly #span: OtelApi.Span;
  readonly #context: OtelApi.Context;
  #ended = false;

  constructor(loaded: Api, span: OtelApi.Span, parent: OtelApi.Context) {
    this.#api = loaded;
    this.#span = span;
    this.#context = loaded.trace.setSpan(parent, span);
  }

  /** Run `work` with this span active, so the spans the application makes inside are its children. */
  run<T>(work: () => T): T {
    return this.#api.context.with(this.#context, work);
  }

  /** Record something that happened to the attempt, e.g. a lease change. */
  event(name: string, attributes: Record<string, number | string>): void {
    if (this.#span.isRecording()) this.#span.addEvent(name, attributes);
  }

  /**
   * End the attempt with `outcome`; any outcome but `success` sets the span's status to ERROR,
   * with `errorType` as `error.type` and `reason` as the status message. Only the first call counts.
   */
  end(outcome: DeliveryOutcome, errorType?: string, reason?: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const span = this.#span;
    if (span.isRecording()) {
      span.setAttribute(TRACE_ATTRIBUTES.outcome, outcome);
      if (outcome !== 'success') {
        span.setAttribute(TRACE_ATTRIBUTES.errorType, errorType ?? outcome);
        span.setStatus(
          reason === undefined
            ? { code: this.#api.SpanStatusCode.ERROR }
            : { code: this.#api.SpanStatusCode.ERROR, message: reason },
        );
      }
    }
    span.end();
  }
}

/**
 * Start the span of one delivery attempt of `message` to `group`, or `undefined` when there is
 * nothing to trace. Its parent is the producer's context carried in the message's properties
 * (else the caller's context), and it links to that context: semantic conventions require the
 * link, and allow the parent when one message is processed, which puts the send and every
 * attempt of it in one trace.
 */
export function startProcessSpan(message: ReceivedMessage, group: string): ProcessSpan | undefined {
  if (api == null) return undefined;
  const tracer = currentTracer(api);
  if (tracer === undefined) return undefined;
  const parent = api.propagation.extract(api.context.active(), message.properties);
  const producer = api.trace.getSpanContext(parent);
  const linked = producer !== undefined && api.trace.isSpanContextValid(producer);
  const span = tracer.startSpan(
    `process ${message.topic}`,
    linked
      ? { kind: api.SpanKind.CONSUMER, links: [{ context: producer }] }
      : { kind: api.SpanKind.CONSUMER },
    parent,
  );
  if (!isLive(api, span)) return undefined;
  if (span.isRecording()) {
    span.setAttributes({
      [TRACE_ATTRIBUTES.system]: SYSTEM,
      [TRACE_ATTRIBUTES.destination]: message.topic,
      [TRACE_ATTRIBUTES.operationType]: 'process',
      [TRACE_ATTRIBUTES.operationName]: 'process',
      [TRACE_ATTRIBUTES.messageId]: message.messageId,
      [TRACE_ATTRIBUTES.consumerGroup]: group,
      [TRACE_ATTRIBUTES.deliveryAttempt]: message.deliveryAttempt,
      [TRACE_ATTRIBUTES.bodySize]: message.body.byteLength,
    });
  }
  return new OtelProcessSpan(api, span, parent);
}
