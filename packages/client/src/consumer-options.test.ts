import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { checkConsumerGroup, checkSubscriptions, MAX_SUBSCRIBED_TOPICS } from './consumer-options.js';

/** `count` topics `t0`, `t1`, … subscribed with `*`. */
const topics = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`t${i}`, '*']));

function refusal(check: () => unknown): ClientError {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(ClientError);
    return error as ClientError;
  }
  throw new Error('the check passed');
}

describe('checkConsumerGroup', () => {
  it.each(['billing', 'a', 'x'.repeat(120), 'A-z_0.9'])('accepts %s', (group) => {
    expect(() => checkConsumerGroup(group)).not.toThrow();
  });

  it.each(['', 'no spaces', 'x'.repeat(121), '%DLQ%billing'])('refuses %j with 400, naming it', (group) => {
    expect(refusal(() => checkConsumerGroup(group))).toMatchObject({
      code: 400,
      retryable: false,
      message: `group '${group}' must be 1–120 of A–Z a–z 0–9 _ . -`,
    });
  });
});

describe('checkSubscriptions', () => {
  it('returns a frozen copy, so later changes to the caller object are not sent', () => {
    const mine = { orders: 'paid || refunded', '%DLQ%billing': '*' };
    const checked = checkSubscriptions(mine);
    mine.orders = '*';
    expect(checked).toEqual({ orders: 'paid || refunded', '%DLQ%billing': '*' });
    expect(Object.isFrozen(checked)).toBe(true);
  });

  it(`accepts 1 to ${MAX_SUBSCRIBED_TOPICS} topics, as the protocol does`, () => {
    expect(() => checkSubscriptions(topics(1))).not.toThrow();
    expect(() => checkSubscriptions(topics(MAX_SUBSCRIBED_TOPICS))).not.toThrow();
    expect(refusal(() => checkSubscriptions(topics(MAX_SUBSCRIBED_TOPICS + 1))).message).toBe(
      'subscriptions must name 1 to 64 topics, got 65',
    );
    expect(refusal(() => checkSubscriptions({})).message).toBe(
      'subscriptions must name 1 to 64 topics, got 0',
    );
  });

  it('names a topic that is neither a topic name nor a DLQ', () => {
    expect(refusal(() => checkSubscriptions({ orders: '*', 'or ders': '*' }))).toMatchObject({
      code: 400,
      message: "cannot subscribe to 'or ders': not a topic name or %DLQ%<group>",
    });
    expect(refusal(() => checkSubscriptions({ '%DLQ%no spaces': '*' })).message).toMatch(/'%DLQ%no spaces'/);
  });

  it('names the topic of an invalid tag expression, with what is wrong with it', () => {
    expect(refusal(() => checkSubscriptions({ orders: 'a || *' }))).toMatchObject({
      code: 400,
      message:
        'the tag expression of \'orders\' is invalid: "a || *" is not a tag expression: use "*" or tags joined by "||" (bad tag "*")',
    });
    const notAString = { orders: 5 } as unknown as Record<string, string>;
    expect(refusal(() => checkSubscriptions(notAString)).message).toMatch(/^the tag expression of 'orders'/);
  });
});
