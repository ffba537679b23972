import { Producer } from '@ricochet/producer';
import { usageError } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { clientFailure } from '../client-failure.js';
import type { Command } from '../command.js';
import { stringListOption, stringOption } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';

/** How long `send` waits for the broker's receipt, connecting included: 30 s. */
const SEND_DEADLINE_MS = 30_000;

const HELP = `Usage:
  ricochet send <topic> [--body <text>]   send one message; without --body, the body is read from
                                          stdin (bytes as they are)

Flags:
  --tag <tag>                what subscriptions filter on
  --key <key>                a business key (repeat for more)
  --message-group <key>      the FIFO key (P5)
  --property <name=value>    a string property (repeat for more)
  --delay-ms <ms>            deliver no earlier than this many ms from now (T1)

Prints the message id and offset once the broker stored it durably (R1).

Examples:
  ricochet send orders --tag created --key order-1042 --body '{"orderId":1042}'
  cat order.json | ricochet send orders --tag created
`;

export const sendCommand: Command = {
  name: 'send',
  synopsis: '<topic>',
  summary: 'send one message (body from --body or stdin)',
  help: HELP,
  options: {
    body: { type: 'string' },
    tag: { type: 'string' },
    key: { type: 'string', multiple: true },
    'message-group': { type: 'string' },
    property: { type: 'string', multiple: true },
    'delay-ms': { type: 'string' },
  },
  async run(context, { positionals, values }) {
    const [topic, extra] = positionals;
    if (topic === undefined) throw usageError('name the topic', 'send');
    if (extra !== undefined)
      throw usageError(`unexpected '${extra}': quote the body and pass it with --body`, 'send');
    const tag = stringOption(values, 'tag');
    const messageGroup = stringOption(values, 'message-group');
    const keys = stringListOption(values, 'key');
    const properties = parseProperties(stringListOption(values, 'property'));
    const delayMs = parseDelayMs(stringOption(values, 'delay-ms'));
    const bodyText = stringOption(values, 'body');
    const body = bodyText ?? (await readStdin(context.io));
    return sendMessage(context, {
      topic,
      body,
      ...(tag === undefined ? {} : { tag }),
      ...(keys.length === 0 ? {} : { keys }),
      ...(messageGroup === undefined ? {} : { messageGroup }),
      ...(properties === undefined ? {} : { properties }),
      ...(delayMs === undefined ? {} : { delayMs }),
    });
  },
};

type Message = Parameters<Producer['send']>[0];

async function sendMessage(context: CommandContext, message: Message): Promise<undefined> {
  await context.admin.probe(); // a broker that is down fails here, at once, with a clear message
  const producer = new Producer({
    endpoint: context.endpoint.webSocketUrl,
    ...(context.token === undefined ? {} : { token: context.token }),
  });
  const deadline = AbortSignal.any([AbortSignal.timeout(SEND_DEADLINE_MS), context.io.signal]);
  try {
    await producer.start({ signal: deadline });
    const receipt = await producer.send(message, { signal: deadline });
    if (context.json)
      writeJson(context, { messageId: receipt.messageId, topic: message.topic, offset: receipt.offset });
    else
      context.io.stdout.write(`sent ${receipt.messageId} to ${message.topic} at offset ${receipt.offset}\n`);
    return undefined;
  } catch (error) {
    throw clientFailure(error, context.endpoint, context.token !== undefined);
  } finally {
    await producer.close();
  }
}

function parseProperties(words: readonly string[]): Record<string, string> | undefined {
  if (words.length === 0) return undefined;
  const properties: Record<string, string> = {};
  for (const word of words) {
    const equals = word.indexOf('=');
    if (equals <= 0) throw usageError(`--property takes name=value, got '${word}'`, 'send');
    properties[word.slice(0, equals)] = word.slice(equals + 1);
  }
  return properties;
}

function parseDelayMs(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const delayMs = Number(raw);
  if (!Number.isInteger(delayMs) || delayMs < 0)
    throw usageError(`--delay-ms must be a whole number of ms, got '${raw}'`, 'send');
  return delayMs;
}

/** The whole of stdin, as bytes; refused on a terminal, where it would wait for typing. */
async function readStdin(io: CliIo): Promise<Uint8Array> {
  if (io.stdin.isTTY === true) {
    throw usageError(
      'give the body with --body <text>, or pipe it in: echo hello | ricochet send <topic>',
      'send',
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
