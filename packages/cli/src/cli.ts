import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { DEFAULT_ENDPOINT, parseBrokerEndpoint } from './broker-endpoint.js';
import { CliError, usageError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { clientFailure } from './client-failure.js';
import type { Command, OptionValues, ParseArgsOptionsConfig } from './command.js';
import { commandContext } from './command-context.js';
import { clusterCommand } from './commands/cluster.js';
import { dlqCommand } from './commands/dlq.js';
import { eventsCommand } from './commands/events.js';
import { groupsCommand } from './commands/groups.js';
import { messagesCommand } from './commands/messages.js';
import { sendCommand } from './commands/send.js';
import { statsCommand } from './commands/stats.js';
import { tailCommand } from './commands/tail.js';
import { topicsCommand } from './commands/topics.js';
import { EXIT_CODES } from './exit-codes.js';

/** Every command, in the order `ricochet --help` lists them. */
const COMMANDS: readonly Command[] = [
  topicsCommand,
  groupsCommand,
  eventsCommand,
  dlqCommand,
  messagesCommand,
  sendCommand,
  tailCommand,
  statsCommand,
  clusterCommand,
];

/** The flags every command takes. */
const GLOBAL_OPTIONS = {
  endpoint: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const satisfies ParseArgsOptionsConfig;

const GLOBAL_HELP = `Global flags:
  --endpoint <url>   the broker: http(s):// or ws(s)://host:port, one port for the admin API and the
                     clients (env RICOCHET_ENDPOINT, default ${DEFAULT_ENDPOINT})
  --token <token>    sent as "Authorization: Bearer <token>" and in the WebSocket hello
                     (env RICOCHET_TOKEN)
  --json             machine-readable output on stdout
  -h, --help         help; \`ricochet <command> --help\` for a command's own
`;

const EXIT_HELP = `Exit codes: ${Object.entries(EXIT_CODES)
  .map(([name, code]) => `${code} ${name.toLowerCase().replace('_', ' ')}`)
  .join(', ')}.
`;

function mainHelp(): string {
  const usages = COMMANDS.map((command) => `${command.name} ${command.synopsis}`.trim());
  const width = Math.max(...usages.map((usage) => usage.length));
  const lines = COMMANDS.map(
    (command, index) => `  ${(usages[index] ?? '').padEnd(width)}  ${command.summary}`,
  );
  return `ricochet: operate a Ricochet broker from the shell.

Usage: ricochet <command> [action] [arguments] [flags]

Commands:
${lines.join('\n')}

${GLOBAL_HELP}
${EXIT_HELP}`;
}

function version(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

/**
 * Run `ricochet` with `argv` (the words after the program's name) and resolve with the exit code.
 * Never rejects: every failure is written to `io.stderr` (as JSON under `--json`) with what to do
 * about it, and its kind becomes the exit code (see {@link EXIT_CODES}).
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let json = argv.includes('--json');
  try {
    const { command, positionals, values } = parseCommandLine(argv);
    json = values.json === true;
    if (command === undefined) {
      if (values.version === true) io.stdout.write(`${version()}\n`);
      else io.stdout.write(mainHelp());
      return EXIT_CODES.OK;
    }
    if (values.help === true) {
      io.stdout.write(`${command.help}\n${GLOBAL_HELP}\n${EXIT_HELP}`);
      return EXIT_CODES.OK;
    }
    const endpoint = parseBrokerEndpoint(
      stringValue(values.endpoint) ?? nonEmpty(io.env.RICOCHET_ENDPOINT) ?? DEFAULT_ENDPOINT,
    );
    const token = stringValue(values.token) ?? nonEmpty(io.env.RICOCHET_TOKEN);
    const context = commandContext(io, endpoint, token, json);
    try {
      return (await command.run(context, { positionals, values })) ?? EXIT_CODES.OK;
    } catch (error) {
      throw error instanceof CliError ? error : clientFailure(error, endpoint, token !== undefined);
    }
  } catch (error) {
    const failure =
      error instanceof CliError ? error : new CliError('FAILED', String(error), { cause: error });
    reportFailure(io, failure, json);
    return failure.exitCode;
  }
}

/**
 * Find the command, then parse the whole line strictly with the global flags and that command's
 * own. The first pass cannot be strict: it does not know the command's flags yet, and only needs
 * to find the command's name among the words.
 */
function parseCommandLine(argv: readonly string[]): {
  command: Command | undefined;
  positionals: string[];
  values: OptionValues;
} {
  const everyOption: ParseArgsOptionsConfig = { ...GLOBAL_OPTIONS };
  for (const command of COMMANDS) Object.assign(everyOption, command.options);
  const first = parseArgs({ args: [...argv], options: everyOption, strict: false, allowPositionals: true });
  const [name] = first.positionals;
  if (name === undefined) {
    if (first.values.help === true || first.values.version === true || argv.length === 0) {
      return { command: undefined, positionals: [], values: first.values };
    }
    throw usageError('name a command');
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command === undefined) throw usageError(`unknown command '${name}'`);
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: { ...GLOBAL_OPTIONS, ...command.options },
      strict: true,
      allowPositionals: true,
    });
    return { command, positionals: parsed.positionals.slice(1), values: parsed.values };
  } catch (error) {
    throw usageError((error as Error).message, command.name);
  }
}

function reportFailure(io: CliIo, failure: CliError, json: boolean): void {
  if (json) {
    const error = {
      exitCode: failure.exitCode,
      kind: failure.exit,
      message: failure.message,
      ...(failure.detailLines.length === 0 ? {} : { details: failure.detailLines }),
      ...(failure.hint === undefined ? {} : { hint: failure.hint }),
    };
    io.stderr.write(`${JSON.stringify({ error })}\n`);
    return;
  }
  let text = `error: ${failure.message}\n`;
  for (const line of failure.detailLines) text += `  - ${line}\n`;
  if (failure.hint !== undefined) text += `hint: ${failure.hint}\n`;
  io.stderr.write(text);
}

function stringValue(value: OptionValues[string]): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
