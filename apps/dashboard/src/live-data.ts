import type { CounterTotals, GroupView, TopicView } from '@ricochet/protocol';
import { api } from './api';
import { CounterHistory } from './rates';

/** How often the overview reads the broker. */
export const POLL_INTERVAL_MS = 2_000;

export type GroupCounterName = 'delivered' | 'acked' | 'retried' | 'deadLettered';

/** What the last poll saw, and the rate history of the last 15 minutes. */
export interface LiveSnapshot {
  readonly topics: readonly TopicView[];
  readonly groups: readonly GroupView[];
  readonly topicRates: ReadonlyMap<string, CounterHistory<'sent'>>;
  readonly groupRates: ReadonlyMap<string, CounterHistory<GroupCounterName>>;
  /** Every topic's and group's counters added up: the overview's big chart. */
  readonly totalRates: CounterHistory<'sent' | GroupCounterName>;
  readonly updatedAtMs: number | undefined;
  readonly error: string | undefined;
}

type Listener = (snapshot: LiveSnapshot) => void;

const topicRates = new Map<string, CounterHistory<'sent'>>();
const groupRates = new Map<string, CounterHistory<GroupCounterName>>();
const totalRates = new CounterHistory<'sent' | GroupCounterName>();
let snapshot: LiveSnapshot = {
  topics: [],
  groups: [],
  topicRates,
  groupRates,
  totalRates,
  updatedAtMs: undefined,
  error: undefined,
};
const listeners = new Set<Listener>();
let timer: ReturnType<typeof setTimeout> | undefined;

/** Every page of a name listing (a broker with more than one page of topics or groups). */
async function listAll<T>(path: string, key: 'topics' | 'groups'): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = '';
  for (let page = 0; page < 100 && cursor !== null; page++) {
    const answer: Record<string, unknown> & { cursor: string | null } = await api(
      'GET',
      `${path}?limit=1000&cursor=${cursor}`,
    );
    items.push(...(answer[key] as T[]));
    cursor = answer.cursor;
  }
  return items;
}

async function poll(): Promise<void> {
  try {
    const [topics, groups, counters] = await Promise.all([
      listAll<TopicView>('/v1/topics', 'topics'),
      listAll<GroupView>('/v1/groups', 'groups'),
      api<CounterTotals>('GET', '/v1/counters'),
    ]);
    const atMs = Date.now();
    const total = { sent: 0, delivered: 0, acked: 0, retried: 0, deadLettered: 0 };
    for (const { name, sent } of counters.topics) {
      historyOf(topicRates, name).add({ atMs, totals: { sent } });
      total.sent += sent;
    }
    for (const { name, delivered, acked, retried, deadLettered } of counters.groups) {
      historyOf(groupRates, name).add({ atMs, totals: { delivered, acked, retried, deadLettered } });
      total.delivered += delivered;
      total.acked += acked;
      total.retried += retried;
      total.deadLettered += deadLettered;
    }
    totalRates.add({ atMs, totals: total });
    snapshot = { ...snapshot, topics, groups, updatedAtMs: atMs, error: undefined };
  } catch (error) {
    snapshot = { ...snapshot, error: error instanceof Error ? error.message : String(error) };
  }
  for (const listener of [...listeners]) listener(snapshot);
}

function historyOf<K extends string>(map: Map<string, CounterHistory<K>>, name: string): CounterHistory<K> {
  let history = map.get(name);
  if (!history) {
    history = new CounterHistory<K>();
    map.set(name, history);
  }
  return history;
}

function schedule(): void {
  timer = setTimeout(async () => {
    await poll();
    if (listeners.size > 0) schedule();
    else timer = undefined;
  }, POLL_INTERVAL_MS);
}

/**
 * Watch the broker: the listener gets a snapshot after every poll. Polling runs while anyone
 * listens (and one poll after, so the history has no hole when a page comes back at once).
 */
export function watchLive(listener: Listener): () => void {
  listeners.add(listener);
  listener(snapshot);
  if (timer === undefined) {
    void poll();
    schedule();
  }
  return () => listeners.delete(listener);
}

/** Read now, without waiting for the next tick (after a write the page wants to see at once). */
export function refreshLive(): Promise<void> {
  return poll();
}
