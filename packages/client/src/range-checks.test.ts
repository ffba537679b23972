import { receiveFrameSchema } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { checkIntegerField, checkIntegerInRange } from './range-checks.js';

describe('checkIntegerField', () => {
  const maxMessages = receiveFrameSchema.shape.maxMessages;

  it('accepts what the protocol field accepts, bounds included', () => {
    for (const value of [1, 16, 32])
      expect(() => checkIntegerField(maxMessages, value, 'maxMessages')).not.toThrow();
  });

  it.each([0, 33, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses %s with 400, naming the field and its bounds',
    (value) => {
      expect(() => checkIntegerField(maxMessages, value, 'maxMessages')).toThrow(
        new ClientError(400, `maxMessages must be an integer from 1 to 32, got ${value}`),
      );
    },
  );

  it('reads the bounds from the schema', () => {
    expect(() =>
      checkIntegerField(receiveFrameSchema.shape.invisibleDurationMs, 9, 'invisibleDurationMs'),
    ).toThrow('invisibleDurationMs must be an integer from 10 to 43200000, got 9');
  });
});

describe('checkIntegerInRange', () => {
  it('accepts integers within the bounds, both included', () => {
    for (const value of [0, 5, 10])
      expect(() => checkIntegerInRange(value, 0, 10, 'closeTimeoutMs')).not.toThrow();
  });

  it.each([-1, 11, 0.5, Number.NaN])('refuses %s with a not retryable 400', (value) => {
    let thrown: unknown;
    try {
      checkIntegerInRange(value, 0, 10, 'closeTimeoutMs');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ClientError);
    expect(thrown).toMatchObject({
      code: 400,
      retryable: false,
      message: `closeTimeoutMs must be an integer from 0 to 10, got ${value}`,
    });
  });
});
