import { describe, expect, it } from 'vitest';
import { FrameInbox, type FrameInboxTarget, InboundBudget } from './frame-inbox.js';

/** A work clock the test moves: a frame "takes" what its handler adds. */
class WorkClock {
  nowMs = 0;
  readonly read = () => this.nowMs;
}

/** What an inbox did to its connection and handler, in order. */
function recordingTarget(clock: WorkClock, costMs = 0) {
  const events: string[] = [];
  const target: FrameInboxTarget = {
    pauseReading: () => events.push('pause'),
    resumeReading: () => events.push('resume'),
    handle: (frame) => {
      events.push(`frame ${frame[0]}`);
      clock.nowMs += costMs;
    },
  };
  return { events, target };
}

const frame = (n: number) => Uint8Array.of(n);
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('InboundBudget', () => {
  it('admits the first frame of a turn whatever it costs, then frames while the turn is under budget', async () => {
    const clock = new WorkClock();
    const budget = new InboundBudget(2, clock.read);
    expect(budget.admit()).toBe(true);
    clock.nowMs += 1.5;
    expect(budget.admit()).toBe(true);
    clock.nowMs += 1;
    expect(budget.admit()).toBe(false);
    await nextTurn();
    // A new turn starts over, however long the last one ran.
    clock.nowMs += 100;
    expect(budget.admit()).toBe(true);
    expect(budget.admit()).toBe(true);
  });
});

describe('FrameInbox', () => {
  it('hands frames over at once while the turn has budget left, without pausing the connection', () => {
    const clock = new WorkClock();
    const { events, target } = recordingTarget(clock, 0.5);
    const inbox = new FrameInbox(new InboundBudget(2, clock.read), target);
    for (const n of [1, 2, 3]) inbox.offer(frame(n));
    expect(events).toEqual(['frame 1', 'frame 2', 'frame 3']);
    expect(inbox.size).toBe(0);
  });

  it('holds the frames after the budget for later turns, in order, with the connection paused meanwhile', async () => {
    const clock = new WorkClock();
    const { events, target } = recordingTarget(clock, 1);
    const inbox = new FrameInbox(new InboundBudget(2, clock.read), target);
    for (const n of [1, 2, 3, 4, 5]) inbox.offer(frame(n));
    // Two frames spend the 2 ms; the connection is paused once, at the first frame held.
    expect(events).toEqual(['frame 1', 'frame 2', 'pause']);
    expect(inbox.size).toBe(3);
    await nextTurn();
    // The next turn takes its 2 ms' worth, and goes on in the turn after.
    expect(events.slice(3)).toEqual(['frame 3', 'frame 4']);
    await nextTurn();
    expect(events.slice(5)).toEqual(['frame 5', 'resume']);
    expect(inbox.size).toBe(0);
  });

  it('hands over a frame that arrives while others wait only after them, even with budget to spare', async () => {
    const clock = new WorkClock();
    const { events, target } = recordingTarget(clock, 3);
    const inbox = new FrameInbox(new InboundBudget(2, clock.read), target);
    inbox.offer(frame(1));
    inbox.offer(frame(2));
    expect(events).toEqual(['frame 1', 'pause']);
    // The turn's clock shows room again; frame 3 (read before the pause took hold) still waits.
    clock.nowMs = 0;
    inbox.offer(frame(3));
    expect(events).toEqual(['frame 1', 'pause']);
    expect(inbox.size).toBe(2);
    for (let turn = 0; turn < 3 && inbox.size > 0; turn++) await nextTurn();
    expect(events).toEqual(['frame 1', 'pause', 'frame 2', 'frame 3', 'resume']);
  });

  it('flushes every waiting frame at once, whatever the budget (the connection closed)', () => {
    const clock = new WorkClock();
    const { events, target } = recordingTarget(clock, 5);
    const inbox = new FrameInbox(new InboundBudget(2, clock.read), target);
    for (const n of [1, 2, 3]) inbox.offer(frame(n));
    expect(events).toEqual(['frame 1', 'pause']);
    inbox.flush();
    expect(events).toEqual(['frame 1', 'pause', 'frame 2', 'frame 3']);
    expect(inbox.size).toBe(0);
  });
});
