import { isTracingAvailable, isTracingLoaded } from '@ricochet/client';
import { describe, expect, it, vi } from 'vitest';
import { producersPerTest } from './producer.fixture.js';

// As in an application that never installed the optional peer: importing it fails.
vi.mock('@opentelemetry/api', () => {
  throw new Error("Cannot find package '@opentelemetry/api'");
});

const { brokers, createProducer } = producersPerTest();

describe('a producer without @opentelemetry/api installed', () => {
  it('sends as always, with no trace context in the properties', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    // Before start(): the first send waits for the failed import, then goes out untraced.
    const result = await producer.send({ topic: 'orders', body: 'x', properties: { region: 'eu' } });
    expect(isTracingLoaded()).toBe(true);
    expect(isTracingAvailable()).toBe(false);
    const [frame] = fake.framesOf('send');
    expect(frame?.messages[0]?.properties).toEqual({ region: 'eu' });
    expect(result.messageId).toBe(frame?.messages[0]?.messageId);
  });
});
