import { describe, expect, it } from 'vitest';
import { type RunLinks, RunList } from './run-list.js';

interface Node extends RunLinks<Node> {
  readonly id: string;
}

const node = (id: string): Node => ({ id, previous: undefined, next: undefined, listed: false });

describe('RunList', () => {
  it('keeps its items in the order added, removing any of them in one step', () => {
    const list = new RunList<Node>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(node) as [Node, Node, Node, Node];
    for (const item of [a, b, c, d]) list.add(item);
    expect(list.delete(b)).toBe(true);
    expect(list.delete(b)).toBe(false);
    expect(list.delete(d)).toBe(true);
    expect(list.delete(a)).toBe(true);
    list.add(b);
    expect([...list].map((item) => item.id)).toEqual(['c', 'b']);
    expect(list.size).toBe(2);
    list.clear();
    expect(list.size).toBe(0);
    expect([...list]).toEqual([]);
    expect(list.delete(c)).toBe(false);
    list.add(c);
    expect([...list].map((item) => item.id)).toEqual(['c']);
  });
});
