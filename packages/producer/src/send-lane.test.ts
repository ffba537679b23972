import { afterEach, describe, expect, it, vi } from 'vitest';
import { takeBatch } from './send-batch.js';
import { EAGER_FRAME_MESSAGES, MAX_LANE_WAIT_MS, SendLane } from './send-lane.js';

interface Item {
  readonly id: number;
  readonly encodedBytesEstimate: number;
  aborted?: boolean;
}

/** A lane whose frames are recorded, each with the answer that frees it, frames of at most 256 and `maxBytes`. */
function recordingLane(maxBytes = 1_000_000) {
  const frames: { readonly ids: number[]; readonly answer: () => void }[] = [];
  const lane = new SendLane<Item>({
    takeFrame: (waiting) => takeBatch(waiting, 256, maxBytes).filter((item) => !item.aborted),
    maxFrameBytes: () => maxBytes,
    sendFrame: (frame, answered) => frames.push({ ids: frame.map((item) => item.id), answer: answered }),
  });
  return { lane, frames };
}

let nextId = 0;
function items(count: number, bytes = 300): Item[] {
  return Array.from({ length: count }, () => ({ id: nextId++, encodedBytesEstimate: bytes }));
}

afterEach(() => {
  vi.useRealTimers();
});

describe('SendLane', () => {
  it('sends at once while fewer than EAGER_FRAME_MESSAGES are on the wire: one send at a time never waits', () => {
    const { lane, frames } = recordingLane();
    for (let i = 0; i < EAGER_FRAME_MESSAGES - 1; i++) lane.add(items(1));
    expect(frames).toHaveLength(EAGER_FRAME_MESSAGES - 1);
    expect(lane.onTheWire).toBe(EAGER_FRAME_MESSAGES - 1);
    expect(lane.waiting).toBe(0);
  });

  it('gathers small frames while the connection is busy, and sends them as one at the next answer', () => {
    const { lane, frames } = recordingLane();
    lane.add(items(EAGER_FRAME_MESSAGES));
    const gathered = [items(5), items(7), items(3)];
    for (const batch of gathered) lane.add(batch);
    expect(frames).toHaveLength(1);
    expect(lane.waiting).toBe(15);
    frames[0]?.answer();
    expect(frames).toHaveLength(2);
    expect(frames[1]?.ids).toEqual(gathered.flat().map((item) => item.id));
    expect(lane.onTheWire).toBe(15);
    // Answered twice (a late failure after the answer) frees it once.
    frames[0]?.answer();
    expect(lane.onTheWire).toBe(15);
  });

  it('sends a full frame at once, busy or not, in order; the rest waits until fewer are on the wire', () => {
    const { lane, frames } = recordingLane();
    lane.add(items(300));
    expect(frames.map((frame) => frame.ids.length)).toEqual([256]);
    const more = items(EAGER_FRAME_MESSAGES - 44);
    lane.add(more);
    // 44 waiting and 20 more: a frame of EAGER_FRAME_MESSAGES, in the order added.
    expect(frames.map((frame) => frame.ids.length)).toEqual([256, EAGER_FRAME_MESSAGES]);
    expect(frames[1]?.ids.slice(44)).toEqual(more.map((item) => item.id));
    lane.add(items(10));
    // 320 on the wire: the answer to the frame of 64 leaves 256, so the 10 wait for the other.
    frames[1]?.answer();
    expect(frames).toHaveLength(2);
    frames[0]?.answer();
    expect(frames.map((frame) => frame.ids.length)).toEqual([256, EAGER_FRAME_MESSAGES, 10]);
  });

  it('sends a frame full of large messages at once while busy, and keeps the rest for the next answer', () => {
    const { lane, frames } = recordingLane(1_000);
    lane.add(items(EAGER_FRAME_MESSAGES, 10));
    lane.add(items(3, 400));
    // 1,200 bytes waiting: one frame of two is full and goes; the third waits.
    expect(frames.map((frame) => frame.ids.length)).toEqual([EAGER_FRAME_MESSAGES, 2]);
    expect(lane.waiting).toBe(1);
    frames[0]?.answer();
    expect(frames.map((frame) => frame.ids.length)).toEqual([EAGER_FRAME_MESSAGES, 2, 1]);
  });

  it('sends what waits after MAX_LANE_WAIT_MS however busy the connection: frames that wait long at the broker hold nothing longer', () => {
    vi.useFakeTimers();
    const { lane, frames } = recordingLane();
    lane.add(items(EAGER_FRAME_MESSAGES));
    lane.add(items(3));
    vi.advanceTimersByTime(MAX_LANE_WAIT_MS - 1);
    lane.add(items(2));
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(frames.map((frame) => frame.ids.length)).toEqual([EAGER_FRAME_MESSAGES, 5]);
    // Sent before the timer, what waited leaves no timer behind.
    lane.add(items(4));
    frames[0]?.answer();
    frames[1]?.answer();
    expect(frames.map((frame) => frame.ids.length)).toEqual([EAGER_FRAME_MESSAGES, 5, 4]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drops sends aborted while they waited, and sends nothing when all were', () => {
    const { lane, frames } = recordingLane();
    lane.add(items(EAGER_FRAME_MESSAGES));
    const waiting = items(4);
    lane.add(waiting);
    for (const item of waiting) item.aborted = true;
    frames[0]?.answer();
    expect(frames).toHaveLength(1);
    expect(lane.waiting).toBe(0);
    expect(lane.onTheWire).toBe(0);
  });
});
