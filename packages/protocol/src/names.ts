/**
 * Topic names: 1–127 characters from `A–Z a–z 0–9 _ . -`. `%` is reserved for the broker's own
 * topics (`%DLQ%<group>`), which clients may consume but never send to.
 */
export const TOPIC_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,127}$/;

/** Group names: 1–120 characters from `A–Z a–z 0–9 _ . -`, so that `%DLQ%<group>` fits in 127. */
export const GROUP_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,120}$/;

/**
 * Message ids: 1–128 characters from `A–Z a–z 0–9 _ . : -`. Clients generate 32 lowercase hex
 * digits (16 bytes, time-ordered); any id in this alphabet is accepted so callers can bring their own.
 */
export const MESSAGE_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A tag: 1–128 characters, no white space, no `|` (the filter separator) and not the wildcard `*`. */
export const TAG_PATTERN = /^[^\s|*]{1,128}$/;

/** The prefix of a group's dead-letter topic (D1). */
export const DLQ_TOPIC_PREFIX = '%DLQ%';

/** The dead-letter topic of a group: `%DLQ%<group>` (D1). */
export function dlqTopicOf(group: string): string {
  return `${DLQ_TOPIC_PREFIX}${group}`;
}

/** The group whose DLQ `topic` is, or `undefined` when it is not a DLQ topic. */
export function groupOfDlqTopic(topic: string): string | undefined {
  if (!topic.startsWith(DLQ_TOPIC_PREFIX)) return undefined;
  const group = topic.slice(DLQ_TOPIC_PREFIX.length);
  return GROUP_NAME_PATTERN.test(group) ? group : undefined;
}

/** Whether clients may subscribe to `topic`: a user topic or a DLQ topic. */
export function isSubscribableTopic(topic: string): boolean {
  return TOPIC_NAME_PATTERN.test(topic) || groupOfDlqTopic(topic) !== undefined;
}
