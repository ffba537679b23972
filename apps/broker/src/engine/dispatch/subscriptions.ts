import { BrokerError, parseTagFilter, type TagFilter } from '@ricochet/protocol';
import type { Subscriptions } from './ready-source.js';

/**
 * Parse a consumer's `topic → tag expression` map. The wire schema has validated the syntax
 * already; a failure here means a caller skipped validation.
 * @throws BrokerError BAD_REQUEST on an invalid expression.
 */
export function parseSubscriptions(subscriptions: Readonly<Record<string, string>>): Subscriptions {
  const parsed = new Map<string, TagFilter>();
  for (const [topic, expression] of Object.entries(subscriptions)) {
    const result = parseTagFilter(expression);
    if (!result.ok) throw BrokerError.of('BAD_REQUEST', result.message, { topic });
    parsed.set(topic, result.filter);
  }
  return parsed;
}
