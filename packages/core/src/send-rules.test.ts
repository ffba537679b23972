import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DELAY_LEVELS_MS } from './delay-levels.js';
import type { TopicType } from './group-config.js';
import { deliverAtOf, type SendDelay, type TopicTypeRule, topicTypeViolation } from './send-rules.js';

const NOW_MS = 1_700_000_000_000;

describe('deliverAtOf (T1)', () => {
  it('is undefined for a message without a delay field', () => {
    expect(deliverAtOf({}, NOW_MS)).toBeUndefined();
  });

  it('takes deliverAt as it is, even in the past', () => {
    expect(deliverAtOf({ deliverAt: NOW_MS + 5 }, NOW_MS)).toBe(NOW_MS + 5);
    expect(deliverAtOf({ deliverAt: NOW_MS - 5 }, NOW_MS)).toBe(NOW_MS - 5);
  });

  it('counts delayMs from now', () => {
    expect(deliverAtOf({ delayMs: 0 }, NOW_MS)).toBe(NOW_MS);
    expect(deliverAtOf({ delayMs: 2_500 }, NOW_MS)).toBe(NOW_MS + 2_500);
  });

  it("maps delayLevel 1–18 to RocketMQ's levels, and any other level to no delay", () => {
    expect(deliverAtOf({ delayLevel: 1 }, NOW_MS)).toBe(NOW_MS + 1_000);
    expect(deliverAtOf({ delayLevel: 18 }, NOW_MS)).toBe(NOW_MS + 7_200_000);
    for (const delayLevel of [0, 19, 1.5]) expect(deliverAtOf({ delayLevel }, NOW_MS)).toBe(NOW_MS);
  });

  it('prefers deliverAt, then delayMs, then delayLevel', () => {
    const all: SendDelay = { deliverAt: 7, delayMs: 100, delayLevel: 3 };
    expect(deliverAtOf(all, NOW_MS)).toBe(7);
    expect(deliverAtOf({ delayMs: 100, delayLevel: 3 }, NOW_MS)).toBe(NOW_MS + 100);
  });

  it('never delivers a delayMs or delayLevel message before now (property)', () => {
    const delay: fc.Arbitrary<SendDelay> = fc.oneof(
      fc.record({ delayMs: fc.nat({ max: 86_400_000 }) }),
      fc.record({ delayLevel: fc.integer({ min: 1, max: DELAY_LEVELS_MS.length }) }),
    );
    fc.assert(
      fc.property(delay, fc.nat({ max: 2 ** 45 }), (message, nowMs) => {
        const deliverAt = deliverAtOf(message, nowMs);
        expect(deliverAt).toBeGreaterThanOrEqual(nowMs);
        if (message.delayLevel !== undefined) {
          expect(deliverAt).toBe(nowMs + (DELAY_LEVELS_MS[message.delayLevel - 1] ?? Number.NaN));
        }
      }),
    );
  });
});

describe('topicTypeViolation (DESIGN.md §2)', () => {
  const cases: readonly [
    TopicType,
    { messageGroup?: string; delayMs?: number },
    TopicTypeRule | undefined,
  ][] = [
    ['normal', {}, undefined],
    ['normal', { delayMs: 10 }, undefined],
    ['normal', { messageGroup: 'a' }, 'normalTakesNoMessageGroup'],
    ['fifo', { messageGroup: 'a' }, undefined],
    ['fifo', {}, 'fifoNeedsMessageGroup'],
    ['fifo', { messageGroup: 'a', delayMs: 10 }, 'fifoTakesNoDelay'],
    ['delay', { delayMs: 10 }, undefined],
    ['delay', {}, 'delayNeedsDelay'],
    ['delay', { delayMs: 10, messageGroup: 'a' }, 'delayTakesNoMessageGroup'],
  ];

  it.each(cases)('a %s topic and %o: %s', (type, fields, rule) => {
    expect(topicTypeViolation(type, { topic: 'orders', ...fields })?.rule).toBe(rule);
  });

  it('says which topic and what it needs', () => {
    expect(topicTypeViolation('fifo', { topic: 'orders' })?.message).toBe(
      'topic "orders" is fifo: a message needs a messageGroup',
    );
    expect(topicTypeViolation('fifo', { topic: 'orders', messageGroup: 'a', delayLevel: 2 })?.message).toBe(
      'topic "orders" is fifo: it takes no delay messages',
    );
    expect(topicTypeViolation('delay', { topic: 'orders' })?.message).toBe(
      'topic "orders" is a delay topic: a message needs deliverAt, delayMs or delayLevel',
    );
    expect(topicTypeViolation('delay', { topic: 'orders', delayMs: 1, messageGroup: 'a' })?.message).toBe(
      'topic "orders" is a delay topic: it takes no messageGroup',
    );
    expect(topicTypeViolation('normal', { topic: 'orders', messageGroup: 'a' })?.message).toBe(
      'topic "orders" is normal: a message with a messageGroup needs a fifo topic',
    );
  });

  it('counts a zero delay as a delay', () => {
    expect(topicTypeViolation('delay', { topic: 't', delayMs: 0 })).toBeUndefined();
    expect(topicTypeViolation('fifo', { topic: 't', messageGroup: 'a', deliverAt: 0 })?.rule).toBe(
      'fifoTakesNoDelay',
    );
  });

  it('lets a message through exactly when its fields fit the type (property)', () => {
    const message = fc.record(
      {
        topic: fc.string({ minLength: 1, maxLength: 8 }),
        messageGroup: fc.string({ maxLength: 4 }),
        deliverAt: fc.nat(),
        delayMs: fc.nat(),
        delayLevel: fc.integer({ min: 1, max: 18 }),
      },
      { requiredKeys: ['topic'] },
    );
    const type = fc.constantFrom<TopicType>('normal', 'fifo', 'delay');
    fc.assert(
      fc.property(type, message, (topicType, sent) => {
        const delayed =
          sent.deliverAt !== undefined || sent.delayMs !== undefined || sent.delayLevel !== undefined;
        const grouped = sent.messageGroup !== undefined;
        const fits = { normal: !grouped, fifo: grouped && !delayed, delay: delayed && !grouped }[topicType];
        const found = topicTypeViolation(topicType, sent);
        expect(found === undefined).toBe(fits);
        if (found) expect(found.message.startsWith(`topic "${sent.topic}" is `)).toBe(true);
      }),
    );
  });
});
