import { describe, expect, it } from 'vitest';
import type { Principal } from './auth-file.js';
import { describeAction, isPermitted, mayReadGroup } from './permissions.js';

function principal(fields: Partial<Principal>): Principal {
  return { name: 'p', tokenSha256: '0'.repeat(64), publish: [], consume: [], metrics: false, ...fields };
}

describe('isPermitted', () => {
  it('publishes only to topics a publish pattern matches', () => {
    const orders = principal({ publish: ['orders', 'payments-*'] });
    expect(isPermitted(orders, { type: 'publish', topic: 'orders' })).toBe(true);
    expect(isPermitted(orders, { type: 'publish', topic: 'payments-eu' })).toBe(true);
    expect(isPermitted(orders, { type: 'publish', topic: 'audit' })).toBe(false);
    expect(isPermitted(principal({}), { type: 'publish', topic: 'orders' })).toBe(false);
  });

  it('consumes when one grant covers the group and every topic', () => {
    const billing = principal({
      consume: [
        { group: 'billing-*', topics: ['orders', '%DLQ%billing-*'] },
        { group: 'audit', topics: ['payments'] },
      ],
    });
    const consume = (group: string, ...topics: string[]) =>
      isPermitted(billing, { type: 'consume', group, topics });
    expect(consume('billing-eu', 'orders')).toBe(true);
    expect(consume('billing-eu', 'orders', '%DLQ%billing-eu')).toBe(true);
    expect(consume('shipping', 'orders')).toBe(false);
    expect(consume('billing-eu', 'payments')).toBe(false);
    // Each grant covers one half; together they do not make a grant of both.
    expect(consume('audit', 'orders')).toBe(false);
    expect(consume('audit', 'payments')).toBe(true);
  });

  it('admin write includes read; read excludes write; none allows neither', () => {
    const read = { type: 'admin', level: 'read' } as const;
    const write = { type: 'admin', level: 'write' } as const;
    expect(isPermitted(principal({ admin: 'write' }), read)).toBe(true);
    expect(isPermitted(principal({ admin: 'write' }), write)).toBe(true);
    expect(isPermitted(principal({ admin: 'read' }), read)).toBe(true);
    expect(isPermitted(principal({ admin: 'read' }), write)).toBe(false);
    expect(isPermitted(principal({}), read)).toBe(false);
  });

  it('reads metrics only when metrics is true', () => {
    expect(isPermitted(principal({ metrics: true }), { type: 'metrics' })).toBe(true);
    expect(isPermitted(principal({ admin: 'write' }), { type: 'metrics' })).toBe(false);
  });
});

describe('describeAction', () => {
  it('names what the caller asked for', () => {
    expect(describeAction({ type: 'consume', group: 'g', topics: ['a', 'b'] })).toBe(
      'consume "a", "b" as group "g"',
    );
    expect(describeAction({ type: 'publish', topic: 'orders' })).toBe('publish to topic "orders"');
  });
});

describe('mayReadGroup (X7)', () => {
  it('lets an admin reader read every group, and anyone else the groups its consume grants name', () => {
    expect(mayReadGroup(principal({ admin: 'read' }), 'anything')).toBe(true);
    const billing = principal({ consume: [{ group: 'billing-*', topics: ['orders'] }] });
    expect(mayReadGroup(billing, 'billing-eu')).toBe(true);
    expect(mayReadGroup(billing, 'shipping')).toBe(false);
    expect(mayReadGroup(principal({ publish: ['orders'] }), 'billing')).toBe(false);
  });
});
