import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { TurnCork } from './turn-cork.js';

/** A stream that records each write it is handed: one entry per `write` or `writev`, as a socket would make one syscall. */
function recordingStream(): { stream: Writable; writes: string[][] } {
  const writes: string[][] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes.push([chunk.toString()]);
      callback();
    },
    writev(chunks, callback) {
      writes.push(chunks.map(({ chunk }) => (chunk as Buffer).toString()));
      callback();
    },
  });
  return { stream, writes };
}

describe('TurnCork', () => {
  it('hands the frames of one turn, promise continuations included, to the stream in one write', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork(stream);
    const send = (frame: string) => {
      cork.hold();
      stream.write(frame);
    };
    send('a');
    send('b');
    await Promise.resolve();
    send('c');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([['a', 'b', 'c']]);

    // The next turn's frames go in a write of their own.
    send('d');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('lets an end flush what the turn held', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork(stream);
    cork.hold();
    stream.write('last');
    stream.end();
    await new Promise((resolve) => stream.once('finish', resolve));
    expect(writes.flat()).toEqual(['last']);
  });
});
