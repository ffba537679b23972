import type { ClusterSelfView, ClusterView } from '@ricochet/protocol';
import { CliError, usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { formatDurationMs } from '../display-format.js';
import { renderTable } from '../text-table.js';

const HELP = `Usage:
  ricochet cluster   the brokers sharing the broker's PostgreSQL database, and each queue of the
                     store: the broker holding its lease, and the one it is assigned to

A broker is live while it renews its row (every broker on the database, owner and standbys);
assignment is rendezvous hashing over the live brokers. Ownership does not follow assignment yet:
one broker owns every queue.

With queues spread (--store-spread), the broker asked also says what it sees itself: when it last
reached the database, and which peers answer it (and when they last did). A broker cut off from
the database shows the last tables it read, and says so. Ask each broker to read a partition off.

Example:
  ricochet cluster --endpoint http://broker-b.internal:7720
`;

export const clusterCommand: Command = {
  name: 'cluster',
  synopsis: '',
  summary: 'the brokers sharing a PostgreSQL store, and who owns each queue',
  help: HELP,
  options: {},
  async run(context, { positionals }) {
    if (positionals.length > 0)
      throw usageError(`cluster takes no arguments, got '${positionals[0]}'`, 'cluster');
    const view = await readCluster(context);
    if (context.json) writeJson(context, view);
    else context.io.stdout.write(renderCluster(view));
    return undefined;
  },
};

async function readCluster(context: CommandContext): Promise<ClusterView> {
  try {
    return await context.admin.call('GET /v1/cluster', '/v1/cluster');
  } catch (error) {
    // Fastify's own 404 for a route it does not serve: a broker on the embedded store has no cluster.
    if (!(error instanceof CliError) || error.exit !== 'NOT_FOUND') throw error;
    throw new CliError('NOT_FOUND', 'this broker has no cluster: it keeps its data in an embedded store', {
      hint: 'brokers share a database with --store postgres://… (see the scale-out guide); older brokers do not serve GET /v1/cluster',
      cause: error,
    });
  }
}

/** The brokers table, the queues table, and a note when ownership and assignment differ. */
export function renderCluster(view: ClusterView): string {
  const brokers =
    view.brokers.length === 0
      ? 'no live brokers\n'
      : renderTable(
          ['BROKER', 'ADVERTISE-URL', 'QUEUES', 'ASSIGNED', 'STANDBY-FOR', 'OWNED', 'EXPIRES-IN'],
          view.brokers.map((broker) => [
            broker.brokerId,
            broker.advertiseUrl ?? '-',
            String(broker.storeQueues),
            queueList(broker.assignedQueues),
            queueList(broker.standbyQueues ?? []),
            queueList(broker.ownedQueues),
            roughDuration(broker.expiresInMs),
          ]),
          { rightAligned: [2] },
        );
  const queues = renderTable(
    ['QUEUE', 'OWNER', 'EPOCH', 'LEASE-LEFT', 'ASSIGNED-TO', 'STANDBYS'],
    view.queues.map((queue) => [
      String(queue.queue),
      queue.owner ?? '-',
      String(queue.epoch),
      queue.owner === undefined ? '-' : roughDuration(queue.expiresInMs),
      queue.assignedTo ?? '-',
      queue.standbys === undefined || queue.standbys.length === 0 ? '-' : queue.standbys.join(','),
    ]),
    { rightAligned: [0, 2] },
  );
  const elsewhere = view.queues.filter(
    (queue) =>
      queue.owner !== undefined && queue.assignedTo !== undefined && queue.owner !== queue.assignedTo,
  ).length;
  const note =
    elsewhere === 0
      ? ''
      : `\n${elsewhere} of ${view.queues.length} queues are owned by a broker other than the one assigned: ownership does not follow assignment yet\n`;
  return `${brokers}\n${queues}${note}${view.self === undefined ? '' : `\n${renderSelf(view.self)}`}`;
}

/**
 * What the answering broker sees itself (queues spread): the database and each peer, reachable or
 * not and since when. Brokers that disagree here are on different sides of a partition.
 */
function renderSelf(self: ClusterSelfView): string {
  const { database } = self;
  const contact =
    database.lastContactAgoMs === undefined
      ? 'never reached'
      : `last contact ${ago(database.lastContactAgoMs)}`;
  const line = database.reachable
    ? `seen from ${self.brokerId}: the database reachable (${contact})\n`
    : `seen from ${self.brokerId}: the database UNREACHABLE (${contact}; the tables above are as old)` +
      `${database.lastError === undefined ? '' : `: ${database.lastError}`}\n`;
  if (self.peers.length === 0) return `${line}no peers\n`;
  const peers = renderTable(
    ['PEER', 'URL', 'REACHABLE', 'LAST-SEEN'],
    self.peers.map((peer) => [
      peer.brokerId,
      peer.url,
      peer.reachable ? 'yes' : 'NO',
      peer.lastSeenAgoMs === undefined ? 'never' : ago(peer.lastSeenAgoMs),
    ]),
  );
  return `${line}${peers}`;
}

function ago(ms: number): string {
  return `${roughDuration(ms)} ago`;
}

/** Queue numbers as runs: `0-3,5,7-8`; `-` for none. */
export function queueList(queues: readonly number[]): string {
  const sorted = [...queues].sort((a, b) => a - b);
  const runs: string[] = [];
  let start = sorted[0];
  for (let index = 0; index < sorted.length; index++) {
    const current = sorted[index] ?? 0;
    const next = sorted[index + 1];
    if (next === current + 1) continue;
    runs.push(start === current ? String(current) : `${start}-${current}`);
    start = next;
  }
  return runs.length === 0 ? '-' : runs.join(',');
}

/** To the second past one: the database's milliseconds are noise on a screen. */
function roughDuration(ms: number): string {
  return formatDurationMs(ms >= 1_000 ? Math.round(ms / 1_000) * 1_000 : Math.round(ms));
}
