import { describe, expect, it } from 'vitest';
import { CapturedSink } from './cli-run.fixture.js';
import { ProgressReporter } from './progress-bar.js';

describe('ProgressReporter', () => {
  it('redraws one line on a terminal, only when the count changes, and ends it', () => {
    const sink = new CapturedSink(true);
    const progress = new ProgressReporter(sink, 'redrive', 4);
    for (const done of [0, 0, 1, 2, 2, 4]) progress.update(done);
    progress.finish();
    expect(sink.text.split('\r').filter((frame) => frame !== '')).toEqual([
      expect.stringMatching(/^redrive \[-+\] 0\/4 {3}0%$/),
      expect.stringMatching(/^redrive \[#+-+\] 1\/4 {2}25%$/),
      expect.stringMatching(/^redrive \[#+-+\] 2\/4 {2}50%$/),
      expect.stringMatching(/^redrive \[#+\] 4\/4 100%\n$/),
    ]);
  });

  it('writes plain lines elsewhere, at most one a second, and always the last', () => {
    const sink = new CapturedSink(false);
    let nowMs = 0;
    const progress = new ProgressReporter(sink, 'redrive', 3, () => nowMs);
    progress.update(0);
    nowMs = 200;
    progress.update(1); // within the second: held back
    nowMs = 1_300;
    progress.update(1);
    nowMs = 1_400;
    progress.update(3);
    progress.finish();
    expect(sink.text).toBe('redrive: 0/3\nredrive: 1/3\nredrive: 3/3\n');
  });
});
