import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ReceivedMessage } from './received-message.js';
import {
  isTracingAvailable,
  isTracingLoaded,
  loadTracing,
  startProcessSpan,
  startSendSpan,
} from './tracing.js';

const delivered = {
  messageId: '0123456789abcdef0123456789abcdef',
  topic: 'orders',
  body: new Uint8Array([1]),
  bornAt: 0,
  deliveryAttempt: 1,
  offset: 0,
  receiptHandle: 'handle',
  properties: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
};

describe('tracing with the API installed and no SDK registered', () => {
  it('loads the API once and makes no span: the API hands out non-recording spans, nothing is kept', async () => {
    expect(trace.getTracerProvider().getTracer('probe').startSpan('probe').isRecording()).toBe(false);
    await Promise.all([loadTracing(), loadTracing()]);
    expect(isTracingLoaded()).toBe(true);
    expect(isTracingAvailable()).toBe(true);
    expect(startSendSpan({ topic: 'orders', messageId: delivered.messageId, body: delivered.body })).toBe(
      undefined,
    );
    // No propagator is registered either, so the producer's context is not even read.
    expect(startProcessSpan(new ReceivedMessage(delivered), 'billing')).toBe(undefined);
  });
});
