/** The most items one merged call takes; a turn with more makes several. */
const MAX_MERGED_ITEMS = 1_024;

interface WaitingCall<Item, Answer> {
  readonly items: readonly Item[];
  readonly resolve: (answer: Answer) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Many calls of one kind, made in one turn of the event loop, carried out by one call of the
 * broker's service (the request pipeline's merging stage, docs/architecture.md "The service
 * seam"): the sends of a turn by one `send`, its acks by one `ack`.
 *
 * A front door whose clients make one call per message (RocketMQ's `SendMessage` and
 * `AckMessage`, every official client) would otherwise make one engine call per message, and each
 * pays for its own pass, its own flush of the turn's writes and its own durability wait; merged,
 * a turn's messages pay once, and the engine sees runs where it saw single items. Each call still
 * gets its own answer (`share` cuts the merged answer to its items), and nothing about an item
 * changes: the engine decides every item as it would in a client's own batch.
 *
 * The merge waits for the end of the turn (`setImmediate`): the calls of every connection read in
 * it are there by then, and the engine's answer waits for a commit anyway, which takes longer.
 */
export class TurnMerger<Item, Answer> {
  readonly #run: (items: readonly Item[]) => Promise<Answer>;
  readonly #share: (answer: Answer, start: number, count: number) => Answer;
  #waiting: WaitingCall<Item, Answer>[] = [];
  #waitingItems = 0;
  #scheduled = false;

  /**
   * @param run the service's call, for all the turn's items at once
   * @param share the part of `run`'s answer that answers the items from `start`, `count` of them
   */
  constructor(
    run: (items: readonly Item[]) => Promise<Answer>,
    share: (answer: Answer, start: number, count: number) => Answer,
  ) {
    this.#run = run;
    this.#share = share;
  }

  /** Carry out `items` with the turn's other calls; resolves with their share of the answer. */
  submit(items: readonly Item[]): Promise<Answer> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ items, resolve, reject });
      this.#waitingItems += items.length;
      if (this.#waitingItems >= MAX_MERGED_ITEMS) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#flush();
        });
      }
    });
  }

  #flush(): void {
    const waiting = this.#waiting;
    if (waiting.length === 0) return;
    this.#waiting = [];
    this.#waitingItems = 0;
    const only = waiting.length === 1 ? waiting[0] : undefined;
    if (only !== undefined) {
      this.#run(only.items).then(only.resolve, only.reject);
      return;
    }
    this.#run(waiting.flatMap((each) => each.items)).then(
      (answer) => {
        let start = 0;
        for (const each of waiting) {
          each.resolve(this.#share(answer, start, each.items.length));
          start += each.items.length;
        }
      },
      (error: unknown) => {
        for (const each of waiting) each.reject(error);
      },
    );
  }
}

/** The share of a merged answer that is one answer per item, in order (a send's receipts). */
export function sliceOf<Each>(answer: readonly Each[], start: number, count: number): Each[] {
  return answer.slice(start, start + count);
}

/**
 * The share of a merged answer that lists only the items that failed, by index (a settle's
 * failures): those of the call's items, indexed from its first.
 */
export function failuresOf<Failure extends { readonly index: number }>(
  answer: readonly Failure[],
  start: number,
  count: number,
): Failure[] {
  const mine: Failure[] = [];
  for (const failure of answer) {
    if (failure.index >= start && failure.index < start + count)
      mine.push({ ...failure, index: failure.index - start });
  }
  return mine;
}
