import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { ConnectionLimits } from './connection-limits.js';
import { logWebSocketError } from './protocol-violations.js';

function fakeLog() {
  return { warn: vi.fn(), debug: vi.fn(), error: vi.fn() };
}

const limits = () =>
  new ConnectionLimits(
    {
      maxConnections: 1,
      maxInflightRequestsPerConnection: 1,
      maxWaitingReceivesPerConnection: 1,
      maxSubscriptionsPerConnection: 1,
    },
    new Registry(),
  );

describe('logWebSocketError', () => {
  it("logs a client's protocol violation at warn, with its reason and no error object (no stack)", () => {
    const log = fakeLog();
    const error = Object.assign(new RangeError('Max payload size exceeded'), {
      code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH',
    });
    expect(logWebSocketError(error, log as never, limits())).toBe('closing');
    expect(log.warn).toHaveBeenCalledWith(
      { code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH', reason: 'Max payload size exceeded' },
      expect.any(String),
    );
    expect(log.error).not.toHaveBeenCalled();
  });

  it('logs a reset connection at debug and a failure of its own at error', () => {
    const log = fakeLog();
    expect(
      logWebSocketError(
        Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }),
        log as never,
        limits(),
      ),
    ).toBe('terminate');
    expect(log.debug).toHaveBeenCalledTimes(1);
    logWebSocketError(new TypeError('bug'), log as never, limits());
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(log.warn).not.toHaveBeenCalled();
  });
});
