/**
 * Receipt handles of a store split into queues name their queue, so that a settle goes to the
 * engine that issued it: `<the engine's handle>@<queue>`. The mark goes at the end because the
 * permission check (`groupAndTopicOfHandle`) reads the group and topic from the start of a handle,
 * and `@` appears in no name, offset or lease number.
 */
const QUEUE_MARK = '@';

/** An engine's handle as clients of a partitioned store hold it. */
export function tagHandle(handle: string, queue: number): string {
  return `${handle}${QUEUE_MARK}${queue}`;
}

/** The queue a handle names and the engine's own handle, or `undefined` when it names no queue of `queues`. */
export function untagHandle(
  text: string,
  queues: number,
): { readonly queue: number; readonly handle: string } | undefined {
  const mark = text.lastIndexOf(QUEUE_MARK);
  if (mark < 1 || mark === text.length - 1 || text.length - mark > 3) return undefined;
  let queue = 0;
  for (let i = mark + 1; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    queue = queue * 10 + digit;
  }
  // One spelling per queue: no leading zero.
  if (text.length - mark > 2 && text.charCodeAt(mark + 1) === 0x30) return undefined;
  if (queue >= queues) return undefined;
  return { queue, handle: text.slice(0, mark) };
}
