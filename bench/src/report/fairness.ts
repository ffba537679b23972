/**
 * How evenly a group's consumers shared the messages: the smallest and the largest share, in per
 * cent of all the messages, and the smallest ÷ the largest (1 when every consumer got as many).
 */
export interface Fairness {
  readonly minSharePercent: number;
  readonly maxSharePercent: number;
  readonly minOverMax: number;
}

/**
 * The fairness of one run from what each consumer processed. A consumer that got nothing counts:
 * its share is 0 and so is min ÷ max.
 * @throws RangeError for no consumers or no messages at all (nothing to share).
 */
export function fairnessOf(perConsumer: readonly number[]): Fairness {
  const total = perConsumer.reduce((sum, processed) => sum + processed, 0);
  if (perConsumer.length === 0 || total === 0) {
    throw new RangeError(`no shares in ${perConsumer.length} consumers and ${total} messages`);
  }
  const min = Math.min(...perConsumer);
  const max = Math.max(...perConsumer);
  return {
    minSharePercent: (100 * min) / total,
    maxSharePercent: (100 * max) / total,
    minOverMax: min / max,
  };
}
