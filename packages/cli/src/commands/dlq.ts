import type { DeadLetterEntry } from '@ricochet/protocol';
import { MESSAGE_ID_PATTERN } from '@ricochet/protocol';
import { listDeadLetters } from '../admin-paging.js';
import { CliError, usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { formatTime, previewBody } from '../display-format.js';
import { renderFields, renderTable, truncateCell } from '../text-table.js';
import { redriveDeadLetters } from './dlq-redrive.js';

const HELP = `Usage:
  ricochet dlq ls <group> [--limit n]              the group's dead-lettered messages, oldest first
  ricochet dlq show <group> <messageId>            one of them: why it failed, its properties, its body
  ricochet dlq redrive <group> --all | <id>…       send them back to their origin topic, for this group
                                                   only, and show the progress until it is done

Flags:
  --limit <n>   ls: at most n messages (default: all)
  --all         redrive: every message in the DLQ now
  --rate <n>    redrive: at most n messages a second (the broker's default: 500)

Example:
  ricochet dlq redrive billing --all --rate 50
`;

export const dlqCommand: Command = {
  name: 'dlq',
  synopsis: 'ls | show | redrive',
  summary: "inspect a group's dead-letter queue and redrive it",
  help: HELP,
  options: { limit: { type: 'string' }, all: { type: 'boolean' }, rate: { type: 'string' } },
  async run(context, { positionals, values }) {
    const [action, group, ...rest] = positionals;
    if (action === undefined) throw usageError('dlq needs ls, show or redrive', 'dlq');
    if (!['ls', 'show', 'redrive'].includes(action)) throw usageError(`unknown action '${action}'`, 'dlq');
    if (group === undefined) throw usageError('name the group', 'dlq');
    switch (action) {
      case 'ls':
        return listDlq(context, group, positiveInteger(stringOption(values, 'limit'), '--limit'));
      case 'show': {
        const [messageId] = rest;
        if (messageId === undefined) throw usageError('name the message id', 'dlq');
        return showDeadLetter(context, group, messageId);
      }
      default: {
        const all = values.all === true;
        if (all === rest.length > 0) throw usageError('redrive takes either --all or message ids', 'dlq');
        const badId = rest.find((id) => !MESSAGE_ID_PATTERN.test(id));
        if (badId !== undefined)
          throw usageError(`'${badId}' is not a message id (1–128 of A–Z a–z 0–9 _ . : -)`, 'dlq');
        return redriveDeadLetters(context, {
          group,
          all,
          messageIds: rest,
          ratePerSecond: positiveInteger(stringOption(values, 'rate'), '--rate'),
        });
      }
    }
  },
};

function positiveInteger(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw usageError(`${flag} must be a whole number ≥ 1, got '${raw}'`, 'dlq');
  return value;
}

async function listDlq(
  context: CommandContext,
  group: string,
  limit: number | undefined,
): Promise<undefined> {
  const entries = await listDeadLetters(context.admin, group, limit === undefined ? {} : { limit });
  if (context.json) {
    writeJson(context, entries);
    return undefined;
  }
  if (entries.length === 0) {
    context.io.stdout.write(`the DLQ of group ${group} is empty\n`);
    return undefined;
  }
  const rows = entries.map((entry) => [
    entry.messageId,
    entry.originTopic ?? '-',
    String(entry.attempts ?? '-'),
    // X6: absent on entries dead-lettered by a broker that predates it.
    entry.cause ?? '-',
    formatTime(entry.deadLetteredAt),
    truncateCell(entry.reason ?? '', 60),
  ]);
  context.io.stdout.write(
    renderTable(['MESSAGE-ID', 'ORIGIN-TOPIC', 'ATTEMPTS', 'CAUSE', 'DEAD-LETTERED', 'REASON'], rows, {
      rightAligned: [2],
    }),
  );
  return undefined;
}

async function showDeadLetter(context: CommandContext, group: string, messageId: string): Promise<undefined> {
  const entries = await listDeadLetters(context.admin, group);
  // The newest copy: a message redriven and failed again is in the DLQ once more, with a new offset.
  const entry = entries.filter((candidate) => candidate.messageId === messageId).at(-1);
  if (entry === undefined) {
    throw new CliError('NOT_FOUND', `message ${messageId} is not in the DLQ of group ${group}`, {
      hint: `list it with \`ricochet dlq ls ${group}\`; \`ricochet messages get ${messageId}\` shows where it is`,
    });
  }
  if (context.json) writeJson(context, entry);
  else context.io.stdout.write(describeDeadLetter(group, entry));
  return undefined;
}

function describeDeadLetter(group: string, entry: DeadLetterEntry): string {
  const body = Buffer.from(entry.bodyBase64, 'base64');
  const properties = Object.entries(entry.properties ?? {});
  return `${renderFields([
    ['message', entry.messageId],
    ['group', group],
    ['origin', `${entry.originTopic ?? '-'} offset ${entry.originOffset ?? '-'}`],
    ['attempts', String(entry.attempts ?? '-')],
    ['cause', entry.cause ?? '-'],
    ['reason', entry.reason ?? '-'],
    ['first failed', entry.firstFailedAt === undefined ? '-' : formatTime(entry.firstFailedAt)],
    ['dead-lettered', formatTime(entry.deadLetteredAt)],
    ['born', formatTime(entry.bornAt)],
    ['tag', entry.tag ?? '-'],
    ['keys', entry.keys?.join(', ') || '-'],
    ['messageGroup', entry.messageGroup ?? '-'],
    [
      'properties',
      properties.length === 0 ? '-' : properties.map(([key, value]) => `${key}=${value}`).join(', '),
    ],
    ['body', `${entry.bodyBytes} bytes`],
  ])}${previewBody(body, { pretty: true })}\n`;
}
