import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** An OpenTelemetry SDK registered globally for one test; `await using` unregisters it. */
export interface TestTracing extends AsyncDisposable {
  /** Every span ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** Resolves once at least `count` spans have ended: an event, not a poll of the clock. */
  ended(count: number): Promise<ReadableSpan[]>;
  /** Forget the spans ended so far, between tests. */
  reset(): void;
}

/**
 * Register the SDK with an in-memory exporter, the W3C propagator and the async context manager,
 * as an application's tracing setup does (the NodeSDK registers the same two by default). The clients reach the
 * same registry: `@opentelemetry/api` keeps it on a global symbol, and they ask it for the tracer
 * at every span, so a registration made after they started counts too.
 */
export function installTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const waiters: { count: number; resolve: (spans: ReadableSpan[]) => void }[] = [];
  const processor = new SimpleSpanProcessor(exporter);
  const provider = new BasicTracerProvider({
    spanProcessors: [
      processor,
      {
        onStart: () => {},
        // After the exporting processor (processors run in order), so the span is in the exporter.
        onEnd: () => {
          const spans = exporter.getFinishedSpans();
          for (const waiter of waiters.filter((w) => spans.length >= w.count)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(spans);
          }
        },
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve(),
      },
    ],
  });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  return {
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    ended: (count) => {
      const spans = exporter.getFinishedSpans();
      if (spans.length >= count) return Promise.resolve(spans);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async [Symbol.asyncDispose]() {
      trace.disable();
      propagation.disable();
      context.disable();
      await provider.shutdown();
    },
  };
}

/** The `messaging.ricochet.*` and `messaging.*` attributes worth a column in a waterfall. */
function labelOf(span: ReadableSpan): string {
  const a = span.attributes;
  const parts: string[] = [];
  if (a['messaging.ricochet.message.delivery_attempt'] !== undefined) {
    parts.push(`attempt ${a['messaging.ricochet.message.delivery_attempt']}`);
  }
  if (a['messaging.ricochet.outcome'] !== undefined) parts.push(String(a['messaging.ricochet.outcome']));
  if (a['messaging.ricochet.send.attempts'] !== undefined) {
    parts.push(`stored after ${a['messaging.ricochet.send.attempts']} attempt(s)`);
  }
  if (span.status.code === SpanStatusCode.ERROR) parts.push(`ERROR: ${span.status.message ?? ''}`.trim());
  return parts.join(', ');
}

function milliseconds(time: readonly [number, number]): number {
  return time[0] * 1_000 + time[1] / 1e6;
}

/**
 * The spans of one trace as a text waterfall: one line per span in start order, indented under
 * its parent, with its start offset, its duration, a bar on a shared time scale, and its outcome;
 * `↳ link` marks a span linked to another of the trace.
 */
export function renderWaterfall(spans: readonly ReadableSpan[], widthChars = 48): string {
  const sorted = [...spans].sort((a, b) => milliseconds(a.startTime) - milliseconds(b.startTime));
  const first = sorted[0];
  if (first === undefined) return '(no spans)';
  const startMs = milliseconds(first.startTime);
  const endMs = Math.max(...sorted.map((span) => milliseconds(span.endTime)));
  const scale = widthChars / Math.max(endMs - startMs, 1);
  const ids = new Map(sorted.map((span, index) => [span.spanContext().spanId, index]));
  const depthOf = (span: ReadableSpan): number => {
    let depth = 0;
    let parent = span.parentSpanContext?.spanId;
    for (let hops = 0; parent !== undefined && ids.has(parent) && hops < sorted.length; hops++) {
      depth += 1;
      parent = sorted[ids.get(parent) ?? 0]?.parentSpanContext?.spanId;
    }
    return depth;
  };
  const rows = sorted.map((span) => {
    const offsetMs = milliseconds(span.startTime) - startMs;
    const durationMs = milliseconds(span.endTime) - milliseconds(span.startTime);
    const lead = Math.min(widthChars - 1, Math.round(offsetMs * scale));
    const bar = `${' '.repeat(lead)}${'█'.repeat(Math.max(1, Math.round(durationMs * scale)))}`.padEnd(
      widthChars,
    );
    const linked = span.links.some((link) => ids.has(link.context.spanId)) ? ' ↳ link' : '';
    const name = `${'  '.repeat(depthOf(span))}${span.name}${linked}`;
    const timing = `+${offsetMs.toFixed(0).padStart(5)} ms ${durationMs.toFixed(1).padStart(7)} ms`;
    return `${name.padEnd(34)} ${timing} |${bar.slice(0, widthChars)}| ${labelOf(span)}`;
  });
  return rows.join('\n');
}
