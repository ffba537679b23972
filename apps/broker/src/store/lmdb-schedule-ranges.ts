import type { Database } from 'lmdb';
import type { ScheduleEntry, ScheduleKey } from './records.js';

/** The `schedule` database: keys `[group, dueAtMs, topic, offset]`, so a group's entries sort by due time. */
export type ScheduleDatabase = Database<ScheduleEntry, [string, number, string, number]>;

/**
 * The groups that have schedule entries. Jumps from group to group: after reading one group's
 * first key it continues past that group's last possible key, so the scan costs one read per
 * group, not one per entry.
 */
export function scheduleGroups(schedule: ScheduleDatabase): string[] {
  const groups: string[] = [];
  let start: [string] | [string, number] = [''];
  for (let guard = 0; guard < 1_000_000; guard++) {
    let next: string | undefined;
    for (const key of schedule.getKeys({ start, limit: 1 })) next = key[0];
    if (next === undefined) break;
    groups.push(next);
    start = [next, Number.POSITIVE_INFINITY];
  }
  return groups;
}

/** The group's earliest entry, if it has one. */
export function firstScheduleKey(schedule: ScheduleDatabase, group: string): ScheduleKey | undefined {
  for (const key of schedule.getKeys({
    start: [group, Number.NEGATIVE_INFINITY],
    end: [group, Number.POSITIVE_INFINITY],
    limit: 1,
  })) {
    return key;
  }
  return undefined;
}

/** Up to `limit` of the group's keys in due order, from its first or from just after `after`. */
export function scheduleKeysAfter(
  schedule: ScheduleDatabase,
  group: string,
  limit: number,
  after?: ScheduleKey,
): ScheduleKey[] {
  const keys: ScheduleKey[] = [];
  for (const key of schedule.getKeys({
    start: scheduleStart(group, after),
    end: [group, Number.POSITIVE_INFINITY],
    limit,
  })) {
    keys.push(key);
  }
  return keys;
}

/** Up to `limit` of the group's entries due at or before `nowMs`, in due order, after `after`. */
export function dueScheduleEntries(
  schedule: ScheduleDatabase,
  group: string,
  nowMs: number,
  limit: number,
  after?: ScheduleKey,
): { key: ScheduleKey; entry: ScheduleEntry }[] {
  const due: { key: ScheduleKey; entry: ScheduleEntry }[] = [];
  // Every key of a due time `nowMs` sorts below [group, nowMs + 1].
  for (const { key, value } of schedule.getRange({
    start: scheduleStart(group, after),
    end: [group, Math.floor(nowMs) + 1],
    limit,
  })) {
    due.push({ key, entry: value });
  }
  return due;
}

/** How many entries the group has. */
export function scheduleCount(schedule: ScheduleDatabase, group: string): number {
  return schedule.getKeysCount({
    start: [group, Number.NEGATIVE_INFINITY],
    end: [group, Number.POSITIVE_INFINITY],
  });
}

/**
 * Where a range over a group's schedule starts: at its beginning, or just after `after`. Offsets
 * are integers and keys encode numbers as doubles, so `offset + 0.5` sorts between `after` and
 * the next possible key.
 */
function scheduleStart(
  group: string,
  after: ScheduleKey | undefined,
): [string, number] | [string, number, string, number] {
  if (after === undefined) return [group, Number.NEGATIVE_INFINITY];
  return [group, after[1], after[2], after[3] + 0.5];
}
