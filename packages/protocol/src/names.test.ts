import { describe, expect, it } from 'vitest';
import { dlqTopicOf, groupOfDlqTopic, isSubscribableTopic, TOPIC_NAME_PATTERN } from './names.js';

describe('topic names', () => {
  it('accept user topics and reserve %', () => {
    expect(TOPIC_NAME_PATTERN.test('orders.v2_eu-1')).toBe(true);
    expect(TOPIC_NAME_PATTERN.test('t'.repeat(127))).toBe(true);
    expect(TOPIC_NAME_PATTERN.test('t'.repeat(128))).toBe(false);
    expect(TOPIC_NAME_PATTERN.test('%DLQ%billing')).toBe(false);
    expect(TOPIC_NAME_PATTERN.test('')).toBe(false);
  });

  it('name DLQ topics %DLQ%<group> (D1)', () => {
    expect(dlqTopicOf('billing')).toBe('%DLQ%billing');
    expect(groupOfDlqTopic('%DLQ%billing')).toBe('billing');
    expect(groupOfDlqTopic('billing')).toBeUndefined();
    expect(groupOfDlqTopic('%DLQ%')).toBeUndefined();
    expect(isSubscribableTopic('%DLQ%billing')).toBe(true);
    expect(isSubscribableTopic('%RETRY%billing')).toBe(false);
  });
});
