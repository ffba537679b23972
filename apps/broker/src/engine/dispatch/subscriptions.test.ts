import { BrokerError, matchesTagFilter } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { parseSubscriptions } from './subscriptions.js';

describe('parseSubscriptions', () => {
  it('parses every topic of the map into its filter, in the order given', () => {
    const parsed = parseSubscriptions({ orders: '*', payments: 'paid || refunded', audit: ' created ' });
    expect([...parsed.keys()]).toEqual(['orders', 'payments', 'audit']);
    expect(parsed.get('orders')).toEqual({ type: 'all' });
    const payments = parsed.get('payments');
    expect(payments && matchesTagFilter(payments, 'paid')).toBe(true);
    expect(payments && matchesTagFilter(payments, 'refunded')).toBe(true);
    expect(payments && matchesTagFilter(payments, 'created')).toBe(false);
    expect(payments && matchesTagFilter(payments, undefined)).toBe(false);
    const audit = parsed.get('audit');
    expect(audit && matchesTagFilter(audit, 'created')).toBe(true);
  });

  it('gives an empty map for no subscriptions', () => {
    expect(parseSubscriptions({}).size).toBe(0);
  });

  it('refuses an invalid expression with BAD_REQUEST naming its topic', () => {
    let thrown: unknown;
    try {
      parseSubscriptions({ orders: '*', payments: 'paid || ' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BrokerError);
    expect(thrown).toMatchObject({ errorName: 'BAD_REQUEST', details: { topic: 'payments' } });
    expect((thrown as Error).message).toContain('paid || ');
  });

  it('refuses a wildcard mixed into a tag list', () => {
    expect(() => parseSubscriptions({ t: 'a || *' })).toThrow(/not a tag expression/);
  });
});
