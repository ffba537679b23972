import { subscribeFrameSchema } from '@ricochet/protocol';
import { badRequestError } from './client-error.js';

/**
 * The group and subscriptions every consumer starts from, checked at construction against the
 * schemas the broker checks `subscribe`, `register` and `receive` frames with, so a consumer that
 * could never consume fails at once, naming the option, instead of at its first request.
 */

/** The most topics one consumer subscribes to; the protocol's schema holds the same bound (a test checks). */
export const MAX_SUBSCRIBED_TOPICS = 64;

/** What is needed of a schema issue to name the subscription at fault. */
interface SubscriptionIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/**
 * Check a consumer group name: 1–120 of `A–Z a–z 0–9 _ . -`.
 * @throws ClientError `400` naming the group.
 */
export function checkConsumerGroup(group: string): void {
  if (!subscribeFrameSchema.shape.group.safeParse(group).success) {
    throw badRequestError(`group '${group}' must be 1–120 of A–Z a–z 0–9 _ . -`);
  }
}

/**
 * A frozen copy of `subscriptions` once checked: 1 to 64 topics, each a topic name or a
 * `%DLQ%<group>`, each with a valid tag expression. The copy keeps a caller's later changes to its
 * own object out of what the consumer sends.
 * @throws ClientError `400` naming the first subscription at fault.
 */
export function checkSubscriptions(
  subscriptions: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  const copy = Object.freeze({ ...subscriptions });
  const parsed = subscribeFrameSchema.shape.subscriptions.safeParse(copy);
  if (parsed.success) return copy;
  throw badRequestError(describeIssue(parsed.error.issues[0], Object.keys(copy).length));
}

function describeIssue(issue: SubscriptionIssue | undefined, topicCount: number): string {
  const [topic] = issue?.path ?? [];
  // Without a topic in its path, the issue is with the map as a whole: its size.
  if (issue === undefined || topic === undefined) {
    return `subscriptions must name 1 to ${MAX_SUBSCRIBED_TOPICS} topics, got ${topicCount}`;
  }
  if (issue.code === 'invalid_key') {
    return `cannot subscribe to '${String(topic)}': not a topic name or %DLQ%<group>`;
  }
  return `the tag expression of '${String(topic)}' is invalid: ${issue.message}`;
}
