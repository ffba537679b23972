import type {
  DeadLetterEntry,
  DeadLetterPage,
  GroupPage,
  GroupView,
  TopicPage,
  TopicView,
} from '@ricochet/protocol';
import type { AdminApi } from './admin-api.js';

/** The most pages one listing reads: 10 000 pages of 1 000, far past any real broker. */
const MAX_PAGES = 10_000;
const PAGE_LIMIT = 1_000;

/** Every topic (DLQ topics too), by name, following the listing's cursor. */
export async function listAllTopics(admin: AdminApi): Promise<TopicView[]> {
  const topics: TopicView[] = [];
  let cursor: string | null = '';
  for (let page = 0; page < MAX_PAGES && cursor !== null; page++) {
    const answer: TopicPage = await admin.call('GET /v1/topics', `/v1/topics${nameQuery(cursor)}`);
    topics.push(...answer.topics);
    cursor = answer.cursor;
  }
  return topics;
}

/** Every group, by name, following the listing's cursor. */
export async function listAllGroups(admin: AdminApi): Promise<GroupView[]> {
  const groups: GroupView[] = [];
  let cursor: string | null = '';
  for (let page = 0; page < MAX_PAGES && cursor !== null; page++) {
    const answer: GroupPage = await admin.call('GET /v1/groups', `/v1/groups${nameQuery(cursor)}`);
    groups.push(...answer.groups);
    cursor = answer.cursor;
  }
  return groups;
}

/** `?limit=&cursor=` of a listing by name; the first page (`''`) has no cursor. */
function nameQuery(cursor: string): string {
  return `?limit=${PAGE_LIMIT}${cursor === '' ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
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
    const answer: DeadLetterPage = await admin.call(
      'GET /v1/groups/:group/dlq',
      `/v1/groups/${encodeURIComponent(group)}/dlq?cursor=${cursor}&limit=${limit}`,
    );
    entries.push(...answer.messages);
    cursor = answer.cursor;
  }
  return entries;
}
