import type { TopicView } from '@ricochet/protocol';
import { listAllTopics } from '../admin-paging.js';
import { usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { currentConfigAt, parseConfigAssignments } from '../config-assignments.js';
import { renderFields, renderTable } from '../text-table.js';

const HELP = `Usage:
  ricochet topics ls                          every topic (DLQ topics too) with its config and size
  ricochet topics get <topic>                 one topic
  ricochet topics set <topic> [field=value…]  create or change a topic; fields you do not name keep
                                              their current value (--replace: their default)

Flags:
  --config <json>   fields as one JSON object, e.g. '{"type":"fifo"}'
  --replace         send only the fields given, so the others take their defaults

Fields: type (normal | fifo | delay), maxBacklogMessages (sends get 530 past it, R4),
retentionMs (how long messages are kept; default 72 h), retentionBytes (optional size bound).

Example:
  ricochet topics set ledger type=fifo maxBacklogMessages=100000
`;

export const topicsCommand: Command = {
  name: 'topics',
  synopsis: 'ls | get | set',
  summary: 'list, show and configure topics',
  help: HELP,
  options: { config: { type: 'string' }, replace: { type: 'boolean' } },
  async run(context, { positionals, values }) {
    const [action, topic, ...fields] = positionals;
    switch (action) {
      case 'ls':
        return listTopics(context);
      case 'get':
        return showTopic(context, requireTopic(topic));
      case 'set':
        return setTopic(
          context,
          requireTopic(topic),
          parseConfigAssignments(fields, stringOption(values, 'config'), 'topics'),
          values.replace === true,
        );
      default:
        throw usageError(
          action === undefined ? 'topics needs ls, get or set' : `unknown action '${action}'`,
          'topics',
        );
    }
  },
};

function requireTopic(topic: string | undefined): string {
  if (topic === undefined) throw usageError('name the topic', 'topics');
  return topic;
}

async function listTopics(context: CommandContext): Promise<undefined> {
  const topics = await listAllTopics(context.admin);
  if (context.json) {
    writeJson(context, topics);
    return undefined;
  }
  if (topics.length === 0) {
    context.io.stdout.write(
      'no topics yet: a send creates one, or `ricochet topics set <topic> type=normal`\n',
    );
    return undefined;
  }
  const rows = topics.map((topic) => [
    topic.name,
    topic.config.type,
    String(topic.stats.messages),
    String(topic.stats.nextOffset),
    topic.config.maxBacklogMessages === undefined ? '-' : String(topic.config.maxBacklogMessages),
  ]);
  context.io.stdout.write(
    renderTable(['TOPIC', 'TYPE', 'MESSAGES', 'NEXT-OFFSET', 'MAX-BACKLOG'], rows, {
      rightAligned: [2, 3, 4],
    }),
  );
  return undefined;
}

function topicPath(topic: string): string {
  return `/v1/topics/${encodeURIComponent(topic)}`;
}

async function showTopic(context: CommandContext, name: string): Promise<undefined> {
  const topic = await context.admin.call('GET /v1/topics/:topic', topicPath(name));
  if (context.json) writeJson(context, topic);
  else context.io.stdout.write(describeTopic(topic));
  return undefined;
}

function describeTopic(topic: TopicView): string {
  const extra = Object.entries(topic.config).filter(
    ([key]) => key !== 'type' && key !== 'maxBacklogMessages',
  );
  return renderFields([
    ['topic', topic.name],
    ['type', topic.config.type],
    [
      'maxBacklogMessages',
      topic.config.maxBacklogMessages === undefined ? 'none' : String(topic.config.maxBacklogMessages),
    ],
    ...extra.map(([key, value]) => [key, JSON.stringify(value)] as const),
    ['messages', String(topic.stats.messages)],
    [
      'offsets',
      `${topic.stats.firstOffset} … ${topic.stats.nextOffset - 1} (next ${topic.stats.nextOffset})`,
    ],
  ]);
}

async function setTopic(
  context: CommandContext,
  name: string,
  fields: Record<string, unknown>,
  replace: boolean,
): Promise<undefined> {
  if (Object.keys(fields).length === 0 && !replace) {
    throw usageError('name at least one field=value (or --config)', 'topics');
  }
  const current = replace ? undefined : await currentConfigAt(context, topicPath(name));
  // A new topic without a type gets the broker's default, `normal`: the PUT requires one.
  const config = { type: 'normal', ...current, ...fields };
  await context.admin.put(topicPath(name), config);
  const topic = await context.admin.call('GET /v1/topics/:topic', topicPath(name));
  if (context.json) writeJson(context, topic);
  else context.io.stdout.write(`topic ${name} saved\n${describeTopic(topic)}`);
  return undefined;
}
