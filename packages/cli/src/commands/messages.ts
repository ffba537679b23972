import type { DeliveryHistoryEntry, MessageView } from '@ricochet/protocol';
import { MESSAGE_ID_PATTERN } from '@ricochet/protocol';
import { usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { formatDurationMs, formatTime, previewBody } from '../display-format.js';
import { renderFields, renderTable } from '../text-table.js';

const HELP = `Usage:
  ricochet messages get <messageId>   the message, and per group where it stands and every
                                      delivery so far: attempt, time, consumer, result, reason

Example:
  ricochet messages get 019aafc3c2d04c5e8a1f6b2d3e4f5a6b
`;

export const messagesCommand: Command = {
  name: 'messages',
  synopsis: 'get <id>',
  summary: 'a message and its delivery history, as a timeline per group',
  help: HELP,
  options: {},
  async run(context, { positionals }) {
    const [action, messageId] = positionals;
    if (action !== 'get')
      throw usageError(
        action === undefined ? 'messages needs get' : `unknown action '${action}'`,
        'messages',
      );
    if (messageId === undefined) throw usageError('name the message id', 'messages');
    if (!MESSAGE_ID_PATTERN.test(messageId)) {
      throw usageError(`'${messageId}' is not a message id (1–128 of A–Z a–z 0–9 _ . : -)`, 'messages');
    }
    return showMessage(context, messageId);
  },
};

async function showMessage(context: CommandContext, messageId: string): Promise<undefined> {
  const view = await context.admin.call('GET /v1/messages/:messageId', `/v1/messages/${messageId}`);
  if (context.json) writeJson(context, view);
  else context.io.stdout.write(describeMessage(view));
  return undefined;
}

/** The message's fields, its body, then one timeline per group (or broadcast instance). */
export function describeMessage(view: MessageView): string {
  const { message } = view;
  const properties = Object.entries(message.properties ?? {});
  let text = renderFields([
    ['message', message.messageId],
    ['topic', `${message.topic} offset ${message.offset}`],
    ['born', formatTime(message.bornAt)],
    ...(message.deliverAt === undefined ? [] : [['deliverAt', formatTime(message.deliverAt)] as const]),
    ['tag', message.tag ?? '-'],
    ['keys', message.keys?.join(', ') || '-'],
    ['messageGroup', message.messageGroup ?? '-'],
    [
      'properties',
      properties.length === 0 ? '-' : properties.map(([key, value]) => `${key}=${value}`).join(', '),
    ],
    ['body', `${message.bodyBytes} bytes`],
  ]);
  text += `${indent(previewBody(Buffer.from(message.bodyBase64, 'base64'), { pretty: true, maxBytes: 512 }))}\n`;
  if (view.groups.length === 0) return `${text}\nno group reads ${message.topic} yet\n`;
  for (const group of view.groups) {
    const who = group.instance === undefined ? group.group : `${group.group} (instance ${group.instance})`;
    const attempt = group.deliveryAttempt === undefined ? '' : `, delivery ${group.deliveryAttempt} running`;
    text += `\ngroup ${who}: ${group.state}${attempt}\n`;
    text += group.history.length === 0 ? '  no delivery yet\n' : indent(renderTimeline(group.history));
  }
  return text;
}

/**
 * One row per delivery, oldest first: attempt, when, by whom, how long, and how it ended; and a
 * `held` row where a retry fell due while the group was paused, and waited.
 */
function renderTimeline(history: readonly DeliveryHistoryEntry[]): string {
  const rows = [...history]
    .sort((a, b) => a.deliveredAt - b.deliveredAt)
    .map((entry) => [
      `#${entry.deliveryAttempt}`,
      formatTime(entry.deliveredAt),
      // A held entry is a retry that waited for its paused group, delivered to no one (DESIGN.md §11).
      entry.result === 'held'
        ? '-'
        : entry.consumerId === undefined
          ? entry.consumer
          : `${entry.consumer} ${entry.consumerId}`,
      entry.result === 'held' ? '-' : formatDurationMs(Math.max(0, entry.settledAt - entry.deliveredAt)),
      // X6: the delivery that dead-lettered the message says why, as `dlq ls` does.
      entry.cause === undefined ? entry.result : `${entry.result} (${entry.cause})`,
      entry.reason ?? '',
    ]);
  return renderTable(['ATTEMPT', 'DELIVERED', 'CONSUMER', 'TOOK', 'RESULT', 'REASON'], rows);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}
