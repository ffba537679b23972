import { BROKER_EVENT_TYPES, type BrokerEvent, brokerEventSchema } from '@ricochet/protocol';
import { usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import type { CommandContext } from '../command-context.js';
import { formatTime } from '../display-format.js';

const HELP = `Usage:
  ricochet events [--group <group>] [--type <type>]   print the broker's events as they happen,
                                                       until Ctrl-C or SIGTERM

Types: ${BROKER_EVENT_TYPES.join(', ')}. With an auth file, the token's principal sees the events of
the groups it may read: every group with "admin", else the groups its consume grants name.

Flags:
  --group <group>   only this group's events
  --type <type>     only events of this type
  --json            each event as the broker sent it, one JSON object per line

Example:
  ricochet events --group billing --type dead_lettered
`;

export const eventsCommand: Command = {
  name: 'events',
  synopsis: '[--group g] [--type t]',
  summary: "follow the broker's events: dead-letters, pauses, redrives",
  help: HELP,
  options: { group: { type: 'string' }, type: { type: 'string' } },
  async run(context, { positionals, values }) {
    if (positionals.length > 0) throw usageError(`unexpected '${positionals[0]}'`, 'events');
    const type = stringOption(values, 'type');
    if (type !== undefined && !(BROKER_EVENT_TYPES as readonly string[]).includes(type))
      throw usageError(`unknown type '${type}': one of ${BROKER_EVENT_TYPES.join(', ')}`, 'events');
    const query = new URLSearchParams();
    const group = stringOption(values, 'group');
    if (group !== undefined) query.set('group', group);
    if (type !== undefined) query.set('type', type);
    return follow(context, `/v1/events${query.size > 0 ? `?${query}` : ''}`);
  },
};

async function follow(context: CommandContext, path: string): Promise<undefined> {
  const { io } = context;
  const body = await context.admin.stream(path, io.signal);
  io.stderr.write('following events; Ctrl-C to stop\n');
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const data = buffered
          .slice(0, end)
          .split('\n')
          .find((line) => line.startsWith('data: '))
          ?.slice(6);
        buffered = buffered.slice(end + 2);
        if (data === undefined) continue;
        if (context.json) {
          io.stdout.write(`${data}\n`);
          continue;
        }
        const parsed = brokerEventSchema.safeParse(JSON.parse(data));
        io.stdout.write(parsed.success ? `${eventLine(parsed.data)}\n` : `${data}\n`);
      }
    }
  } catch (error) {
    if (!io.signal.aborted) throw error;
  }
  return undefined;
}

/** One event in one line: when, what, which group, and its particulars. */
export function eventLine(event: BrokerEvent): string {
  const head = `${formatTime(event.atMs)}  ${event.type.padEnd(16)}  ${event.group}`;
  switch (event.type) {
    case 'dead_lettered':
      return `${head}  ${event.entry.messageId} from ${event.entry.originTopic} after ${event.entry.attempts} attempts: ${event.entry.reason}`;
    case 'group_paused':
    case 'group_resumed':
      return `${head}  ${event.cause}: ${event.why}`;
    case 'redrive_progress':
      return `${head}  ${event.redriven}/${event.total} redriven`;
  }
}
