import type { AdminApi } from './admin-api.js';
import type { DeadLetterEntry, DeadLetterPage, GroupView, TopicView } from './admin-views.js';

/** The most pages one listing reads: 10 000 pages of 1 000, far past any real broker. */
const MAX_PAGES = 10_000;
const PAGE_LIMIT = 1_000;

/** Every topic (DLQ topics too), by name, following the listing's cursor. */
export function listAllTopics(admin: AdminApi): Promise<TopicView[]> {
  return listAllByName<TopicView>(admin, '/v1/topics', 'topics');
}

/** Every group, by name, following the listing's cursor. */
export function listAllGroups(admin: AdminApi): Promise<GroupView[]> {
  return listAllByName<GroupView>(admin, '/v1/groups', 'groups');
}

async function listAllByName<T>(admin: AdminApi, path: string, key: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = '';
  for (let page = 0; page < MAX_PAGES && cursor !== null; page++) {
    const query: string = `?limit=${PAGE_LIMIT}${cursor === '' ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const answer = (await admin.get(`${path}${query}`)) as Record<string, unknown>;
    items.push(...((answer[key] ?? []) as T[]));
    cursor = (answer.cursor ?? null) as string | null;
  }
  return items;
}

/**
 * The group's DLQ messages not yet redriven, oldest first, from DLQ offset `fromOffset`, at most
 * `limit` of them (all when absent).
 */
export async function listDeadLetters(
  admin: AdminApi,
  group: string,
  options: { fromOffset?: number; limit?: number } = {},
): Promise<DeadLetterEntry[]> {
  const entries: DeadLetterEntry[] = [];
  let cursor: number | null = options.fromOffset ?? 0;
  const wanted = options.limit ?? Number.POSITIVE_INFINITY;
  for (let page = 0; page < MAX_PAGES && cursor !== null && entries.length < wanted; page++) {
    const limit = Math.min(PAGE_LIMIT, wanted - entries.length);
    const answer = (await admin.get(
      `/v1/groups/${encodeURIComponent(group)}/dlq?cursor=${cursor}&limit=${limit}`,
    )) as DeadLetterPage;
    entries.push(...answer.messages);
    cursor = answer.cursor;
  }
  return entries;
}
