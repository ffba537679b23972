import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHarness } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { AppendWaker } from './append-waker.js';

let h: EngineHarness;
let wakes: Map<string, number>;
/** Which topics each group reads. */
const reads: Record<string, readonly string[]> = { a: ['t'], b: ['u', 'v'], c: ['w'], late: ['t'] };

function watch(name: string): GroupRuntime {
  const group = h.groups.put(name, {});
  // As subscribing does: the registry learns which topics the group reads.
  for (const topic of reads[name] ?? []) h.groups.addReader(group, topic);
  group.onWake(() => wakes.set(name, (wakes.get(name) ?? 0) + 1));
  return group;
}

beforeEach(() => {
  h = new EngineHarness('waker');
  wakes = new Map();
  for (const name of ['a', 'b', 'c']) watch(name);
});

afterEach(() => h.close());

const waker = () => new AppendWaker(h.groups, (group, topic) => reads[group.name]?.includes(topic) ?? false);

describe('AppendWaker', () => {
  it('wakes the groups that read the topics appended to in a turn, once each, after the turn', async () => {
    const appends = waker();
    appends.appended('t');
    appends.appended('u');
    appends.appended('v');
    appends.appended('t');
    expect(wakes.size).toBe(0);
    await Promise.resolve();
    expect(Object.fromEntries(wakes)).toEqual({ a: 1, b: 1 });
  });

  it('wakes again for the appends of a later turn', async () => {
    const appends = waker();
    appends.appended('w');
    await Promise.resolve();
    appends.appended('w');
    appends.appended('x');
    await Promise.resolve();
    expect(Object.fromEntries(wakes)).toEqual({ c: 2 });
  });

  it('wakes a group created after the append but before the turn ended', async () => {
    const appends = waker();
    appends.appended('t');
    watch('late');
    await Promise.resolve();
    expect(wakes.get('late')).toBe(1);
  });

  it('looks only at the groups that read the topics appended to, however many the broker has', async () => {
    for (let index = 0; index < 1_000; index++) h.groups.put(`idle-${index}`, {});
    const asked: string[] = [];
    const appends = new AppendWaker(h.groups, (group, topic) => {
      asked.push(group.name);
      return reads[group.name]?.includes(topic) ?? false;
    });
    appends.appended('t');
    await Promise.resolve();
    expect(asked).toEqual(['a']);
    expect(Object.fromEntries(wakes)).toEqual({ a: 1 });
  });
});
