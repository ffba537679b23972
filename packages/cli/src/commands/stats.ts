import { setTimeout as sleep } from 'node:timers/promises';
import type { GroupView, TopicView } from '@ricochet/protocol';
import { listAllGroups, listAllTopics } from '../admin-paging.js';
import { usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { renderTable } from '../text-table.js';

const HELP = `Usage:
  ricochet stats [--once] [--interval-ms n]   topics and groups on one screen: sizes, rates, backlog,
                                              inflight, retries, DLQ; refreshed until Ctrl-C on a
                                              terminal, one snapshot otherwise

Flags:
  --once            one snapshot, even on a terminal
  --interval-ms <n> refresh every n ms (default 2000)
  --json            one snapshot as JSON: { at, topics, groups }

Rates (per second) are measured between two refreshes, so the first screen shows "-".
`;

/** Clear the screen and put the cursor top-left (VT100), for the refreshing view. */
const CLEAR_SCREEN = '\u001b[H\u001b[2J';

/** Two readings of the broker, for rates. */
interface Snapshot {
  readonly atMs: number;
  readonly topics: readonly TopicView[];
  readonly groups: readonly GroupView[];
}

export const statsCommand: Command = {
  name: 'stats',
  synopsis: '',
  summary: 'topics and groups on one screen, refreshed live',
  help: HELP,
  options: { once: { type: 'boolean' }, 'interval-ms': { type: 'string' } },
  async run(context, { values }) {
    const rawInterval = stringOption(values, 'interval-ms') ?? '2000';
    const intervalMs = Number(rawInterval);
    if (!Number.isInteger(intervalMs) || intervalMs < 100) {
      throw usageError(`--interval-ms must be a whole number ≥ 100, got '${rawInterval}'`, 'stats');
    }
    const live = context.io.stdout.isTTY === true && values.once !== true && !context.json;
    let previous: Snapshot | undefined;
    for (;;) {
      const current = await takeSnapshot(context);
      if (context.json) {
        writeJson(context, {
          at: new Date(current.atMs).toISOString(),
          topics: current.topics,
          groups: current.groups,
        });
        return undefined;
      }
      context.io.stdout.write(`${live ? CLEAR_SCREEN : ''}${renderStats(context, current, previous)}`);
      if (!live) return undefined;
      previous = current;
      try {
        await sleep(intervalMs, undefined, { signal: context.io.signal });
      } catch {
        return undefined; // Ctrl-C or SIGTERM: the normal end of a live view
      }
    }
  },
};

async function takeSnapshot(context: CommandContext): Promise<Snapshot> {
  const [topics, groups] = await Promise.all([listAllTopics(context.admin), listAllGroups(context.admin)]);
  return { atMs: Date.now(), topics, groups };
}

/** The one-screen view: a topics table and a groups table, with rates against `previous`. */
export function renderStats(
  context: CommandContext,
  current: Snapshot,
  previous: Snapshot | undefined,
): string {
  const seconds = previous === undefined ? 0 : (current.atMs - previous.atMs) / 1_000;
  const rate = (now: number, before: number | undefined) =>
    before === undefined || seconds <= 0 ? '-' : (Math.max(0, now - before) / seconds).toFixed(1);
  const topicBefore = new Map(previous?.topics.map((topic) => [topic.name, topic.stats.nextOffset]));
  const groupBefore = new Map(previous?.groups.map((group) => [group.name, group.stats]));
  const header = `ricochet ${context.endpoint.adminUrl} · ${new Date(current.atMs).toISOString()}\n\n`;
  const topics =
    current.topics.length === 0
      ? 'no topics\n'
      : renderTable(
          ['TOPIC', 'TYPE', 'MESSAGES', 'SENT/S'],
          current.topics.map((topic) => [
            topic.name,
            topic.config.type,
            String(topic.stats.messages),
            rate(topic.stats.nextOffset, topicBefore.get(topic.name)),
          ]),
          { rightAligned: [2, 3] },
        );
  const groups =
    current.groups.length === 0
      ? 'no groups\n'
      : renderTable(
          ['GROUP', 'READY', 'INFLIGHT', 'WAITING-RETRY', 'DLQ', 'COMMITTED', 'COMMITTED/S', 'DLQ/S'],
          current.groups.map((group) => {
            const before = groupBefore.get(group.name);
            return [
              group.name,
              String(group.stats.ready),
              String(group.stats.inflight),
              String(group.stats.waitingRetry),
              String(group.stats.dlq),
              String(group.stats.committed),
              rate(group.stats.committed, before?.committed),
              rate(group.stats.dlq, before?.dlq),
            ];
          }),
          { rightAligned: [1, 2, 3, 4, 5, 6, 7] },
        );
  return `${header}${topics}\n${groups}`;
}
