import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { FrameBoundaryTracker, watchMessageDeadline } from './message-deadline.js';

/** A masked client frame header (RFC 6455 §5.2) followed by `payloadLength` bytes. */
function frame(opcode: number, payloadLength: number, fin = true): Uint8Array {
  const first = (fin ? 0x80 : 0) | opcode;
  const header =
    payloadLength < 126
      ? [first, 0x80 | payloadLength]
      : payloadLength < 65_536
        ? [first, 0x80 | 126, payloadLength >> 8, payloadLength & 0xff]
        : [
            first,
            0x80 | 127,
            0,
            0,
            0,
            0,
            (payloadLength >>> 24) & 0xff,
            (payloadLength >> 16) & 0xff,
            (payloadLength >> 8) & 0xff,
            payloadLength & 0xff,
          ];
  return new Uint8Array([...header, 1, 2, 3, 4, ...new Uint8Array(payloadLength)]);
}

describe('FrameBoundaryTracker', () => {
  it('stands between messages after whole frames of every length encoding', () => {
    const tracker = new FrameBoundaryTracker();
    for (const length of [0, 5, 125, 126, 300, 65_535, 70_000]) {
      tracker.push(frame(0x2, length));
      expect(tracker.betweenMessages).toBe(true);
    }
    expect(tracker.messagesCompleted).toBe(7);
  });

  it('follows a frame split at every byte', () => {
    const tracker = new FrameBoundaryTracker();
    const bytes = frame(0x2, 300);
    for (let i = 0; i < bytes.length; i++) {
      tracker.push(bytes.subarray(i, i + 1));
      expect(tracker.betweenMessages).toBe(i === bytes.length - 1);
    }
  });

  it('is inside a message from a fragment without FIN until the final continuation, control frames between', () => {
    const tracker = new FrameBoundaryTracker();
    tracker.push(frame(0x2, 10, false));
    expect(tracker.betweenMessages).toBe(false);
    tracker.push(frame(0x9, 4)); // a ping between fragments
    expect(tracker.betweenMessages).toBe(false);
    tracker.push(frame(0x0, 10, false));
    expect(tracker.betweenMessages).toBe(false);
    tracker.push(frame(0x0, 10, true));
    expect(tracker.betweenMessages).toBe(true);
    expect(tracker.messagesCompleted).toBe(1);
  });

  it('sees a message end and the next begin in one chunk', () => {
    const tracker = new FrameBoundaryTracker();
    const next = frame(0x2, 50);
    tracker.push(new Uint8Array([...frame(0x2, 3), ...next.subarray(0, 10)]));
    expect(tracker.messagesCompleted).toBe(1);
    expect(tracker.betweenMessages).toBe(false);
  });
});

describe('watchMessageDeadline', () => {
  it('fires when a message outlives the deadline, not while messages finish in time', () => {
    vi.useFakeTimers();
    try {
      const socket = new PassThrough();
      const onTimeout = vi.fn();
      watchMessageDeadline(socket, 1_000, onTimeout);
      socket.emit('data', Buffer.from(frame(0x2, 20)));
      vi.advanceTimersByTime(5_000);
      expect(onTimeout).not.toHaveBeenCalled();

      const slow = frame(0x2, 20);
      socket.emit('data', Buffer.from(slow.subarray(0, 8)));
      vi.advanceTimersByTime(600);
      socket.emit('data', Buffer.from(slow.subarray(8, 12)));
      // The deadline counts from the message's first byte, not from its latest chunk.
      vi.advanceTimersByTime(500);
      expect(onTimeout).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
