import { randomBytes } from 'node:crypto';
import type { GroupView } from '@ricochet/protocol';
import { ConsumeResult, PushConsumer, type ReceivedMessage } from '@ricochet/push-consumer';
import { CliError, usageError } from '../cli-error.js';
import type { TextSink } from '../cli-io.js';
import { clientFailure } from '../client-failure.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import type { CommandContext } from '../command-context.js';
import { formatTime, previewBody } from '../display-format.js';
import { truncateCell } from '../text-table.js';
import { groupPath } from './groups.js';

/**
 * The group `tail` reads as when no `--group` is given: a broadcasting group, so a tail never takes
 * a message from anyone (every instance gets every message, B1), where each tail is an instance of
 * its own that starts at the topic's end. Its instances are forgotten a minute after their tail
 * stops, so a stopped tail does not hold a backlog (R4) for long; the group itself stays, one
 * record reused by every tail.
 */
export const TAIL_GROUP = 'ricochet-tail';
const TAIL_GROUP_CONFIG = {
  consumeMode: 'broadcasting',
  startFrom: 'latest',
  broadcastInstanceTtlMs: 60_000,
} as const;
/** How long `tail` may take to connect and subscribe: 30 s. */
const START_DEADLINE_MS = 30_000;

const HELP = `Usage:
  ricochet tail <topic> [--group <group>] [--tag <expr>]   print messages as they arrive, until
                                                            Ctrl-C or SIGTERM

Without --group, each tail is its own instance of the broadcasting group "${TAIL_GROUP}" (made on
first use): it sees every message sent after it started and takes none from other consumers. With
--group, it joins that group as one more consumer: in a clustering group it receives a share of the
messages and commits them, as any consumer of the group would.

Flags:
  --group <group>   consume as this group instead
  --tag <expr>      only messages whose tag matches: a tag, or tags joined by ||  (default *)
  --json            one JSON object per message and line

Example:
  ricochet tail orders --tag 'created||paid'
`;

export const tailCommand: Command = {
  name: 'tail',
  synopsis: '<topic>',
  summary: 'print messages as they arrive, until Ctrl-C',
  help: HELP,
  options: { group: { type: 'string' }, tag: { type: 'string' } },
  async run(context, { positionals, values }) {
    const [topic, extra] = positionals;
    if (topic === undefined) throw usageError('name the topic', 'tail');
    if (extra !== undefined) throw usageError(`unexpected '${extra}': tail reads one topic`, 'tail');
    return tail(context, topic, stringOption(values, 'group'), stringOption(values, 'tag') ?? '*');
  },
};

async function tail(
  context: CommandContext,
  topic: string,
  groupOption: string | undefined,
  tagExpression: string,
) {
  const { io } = context;
  const group = groupOption ?? TAIL_GROUP;
  const view = groupOption === undefined ? await ensureTailGroup(context) : await findGroup(context, group);
  if (view?.config.consumeMode === 'clustering') {
    io.stderr.write(
      `note: group ${group} is clustering: this tail takes a share of its messages and commits them\n`,
    );
  }
  const clientId = `tail-${randomBytes(4).toString('hex')}`;
  const consumer = new PushConsumer({
    endpoint: context.endpoint.webSocketUrl,
    group,
    clientId,
    subscriptions: { [topic]: tagExpression },
    // One at a time, so lines come out in the order the broker delivers.
    concurrency: 1,
    listener: (message) => {
      io.stdout.write(
        context.json ? `${JSON.stringify(messageJson(message))}\n` : `${messageLine(message)}\n`,
      );
      return ConsumeResult.SUCCESS;
    },
    onListenerError: (error) => io.stderr.write(`tail: ${String(error)}\n`),
    ...(context.token === undefined ? {} : { token: context.token }),
  });
  try {
    await consumer.start({ signal: AbortSignal.any([AbortSignal.timeout(START_DEADLINE_MS), io.signal]) });
    io.stderr.write(`tailing ${topic} as group ${group} (instance ${clientId}); Ctrl-C to stop\n`);
    const stopped = new Promise<undefined>((resolve) => {
      if (io.signal.aborted) resolve(undefined);
      io.signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    const lost = watchConnection(consumer, io.stderr);
    const error = await Promise.race([stopped, lost]);
    if (error !== undefined) throw error;
    return undefined;
  } catch (error) {
    if (io.signal.aborted) return undefined; // stopped while connecting
    throw clientFailure(error, context.endpoint, context.token !== undefined);
  } finally {
    await consumer.close();
  }
}

/**
 * Tell about reconnects on stderr (the consumer reconnects by itself, C1), and resolve with the
 * error that closed the connection for good, such as a token the broker no longer accepts.
 */
async function watchConnection(consumer: PushConsumer, stderr: TextSink): Promise<unknown> {
  let reconnecting = false;
  for await (const status of consumer.status()) {
    if (status.state === 'reconnecting' && !reconnecting) {
      reconnecting = true;
      const why = status.error === undefined ? '' : ` (${status.error.message})`;
      stderr.write(`tail: connection lost${why}; reconnecting\n`);
    } else if (status.state === 'connected' && reconnecting) {
      reconnecting = false;
      stderr.write('tail: reconnected\n');
    } else if (status.state === 'closed') {
      return status.error;
    }
  }
  return undefined;
}

/** Make sure the tail group exists with its config; PUT only when it differs (needs admin write). */
async function ensureTailGroup(context: CommandContext): Promise<GroupView> {
  const current = await findGroup(context, TAIL_GROUP);
  const matches =
    current !== undefined &&
    Object.entries(TAIL_GROUP_CONFIG).every(
      ([key, value]) => (current.config as Readonly<Record<string, unknown>>)[key] === value,
    );
  if (matches) return current;
  return await context.admin.call('PUT /v1/groups/:group', groupPath(TAIL_GROUP), {
    ...current?.config,
    ...TAIL_GROUP_CONFIG,
  });
}

async function findGroup(context: CommandContext, group: string): Promise<GroupView | undefined> {
  try {
    return await context.admin.call('GET /v1/groups/:group', groupPath(group));
  } catch (error) {
    // A group that does not exist yet is made with the defaults on first use.
    if (error instanceof CliError && error.exit === 'NOT_FOUND') return undefined;
    throw error;
  }
}

function messageLine(message: ReceivedMessage): string {
  const parts = [
    formatTime(message.bornAt),
    `${message.topic}@${message.offset}`,
    message.messageId,
    ...(message.tag === undefined ? [] : [`tag=${message.tag}`]),
    ...(message.keys.length === 0 ? [] : [`keys=${message.keys.join(',')}`]),
    ...(message.messageGroup === undefined ? [] : [`group=${message.messageGroup}`]),
    ...(message.deliveryAttempt > 1 ? [`attempt=${message.deliveryAttempt}`] : []),
  ];
  return `${parts.join('  ')}  ${truncateCell(previewBody(message.body, { maxBytes: 512 }), 200)}`;
}

function messageJson(message: ReceivedMessage) {
  return {
    messageId: message.messageId,
    topic: message.topic,
    offset: message.offset,
    tag: message.tag,
    keys: message.keys,
    messageGroup: message.messageGroup,
    properties: message.properties,
    bornAt: message.bornAt,
    deliveryAttempt: message.deliveryAttempt,
    bodyBase64: Buffer.from(message.body).toString('base64'),
  };
}
