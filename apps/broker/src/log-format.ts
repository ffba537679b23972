import { type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import type { BrokerConfig } from './config.js';

// The broker's log as an operator reads it: pino's records, through Fastify, as JSON lines or as
// pretty lines with the same fields; per-request lines at `debug`; one start line.

/** How log lines are written: one JSON object per line, or one readable line per record. */
export type LogFormat = 'json' | 'pretty';

/** Where log lines go: stdout, or a test's capture. */
export interface LogOutput {
  write(text: string): unknown;
}

/** `--log-format` when given; otherwise pretty on a terminal and JSON for anything else (a file, a pipe, a log shipper). */
export function logFormatOf(configured: LogFormat | undefined, isTerminal: boolean): LogFormat {
  return configured ?? (isTerminal ? 'pretty' : 'json');
}

/** pino's numeric levels, by name and back. */
const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const INFO_LEVEL = 30;

/**
 * The fields a pretty line leaves out: shown in its own place (time, level, message, error), or
 * the same on every line of one process (pid, hostname).
 */
const PLACED_FIELDS = new Set(['time', 'level', 'msg', 'err', 'pid', 'hostname']);

/**
 * One pino record as a pretty line: the time (UTC), the level, the message, then every other
 * field as `key=value`, and an error's stack on the lines below, indented.
 */
export function prettyLogLine(record: Readonly<Record<string, unknown>>): string {
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString() : '';
  const level = LEVEL_NAMES[Number(record.level)] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([key, value]) => !PLACED_FIELDS.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${prettyValue(value)}`);
  const message = typeof record.msg === 'string' ? record.msg : '';
  const head = [time, level.padEnd(5), message, ...fields].filter((part) => part !== '').join(' ');
  const error = record.err as { readonly message?: unknown; readonly stack?: unknown } | undefined;
  if (error === undefined || error === null || typeof error !== 'object') return head;
  const stack = typeof error.stack === 'string' ? error.stack : `Error: ${String(error.message)}`;
  return `${head}\n${stack
    .split('\n')
    .map((line) => `    ${line.trimStart()}`)
    .join('\n')}`;
}

/** A field's value: a bare word, number or boolean as it is, anything else as JSON (quoted, so a space cannot split it). */
function prettyValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string' && /^[\w./:@%+-]+$/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

/**
 * pino's destination in pretty form: each JSON line pino writes, rewritten as {@link prettyLogLine}.
 * A line that is not JSON (never from pino) passes through unchanged.
 */
export function prettyDestination(output: LogOutput): LogOutput {
  return {
    write(text: string) {
      for (const line of text.split('\n')) {
        if (line === '') continue;
        let record: unknown;
        try {
          record = JSON.parse(line);
        } catch {
          output.write(`${line}\n`);
          continue;
        }
        output.write(`${prettyLogLine(record as Record<string, unknown>)}\n`);
      }
    },
  };
}

/**
 * What Fastify logs of each HTTP request, one level down from its own: a request is `debug`
 * (a dashboard open polls several a second; at `info` they would bury the lines that matter),
 * a route not found too; a failed response stays at `error`.
 */
class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.trace({ method: request.method, url: request.url }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const fields = {
      method: request.method,
      url: request.url,
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.debug(fields, 'request completed');
  }

  override routeNotFound(request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: request.url }, 'route not found');
  }

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (reply.statusCode >= 500) reply.log.error({ url: request.url, err: error }, error.message);
    else reply.log.debug({ url: request.url, statusCode: reply.statusCode }, error.message);
  }
}

/**
 * What Fastify's `listen` logs once per address: the broker prints its own start line instead
 * ({@link startLine}), so this message, and only this one, is dropped.
 */
export const FASTIFY_LISTENING_TEXT = 'fastify listening (the broker prints its own start line)';

/**
 * The logger options of the broker's Fastify app: level, format, destination (`output`, stdout
 * unless a test captures it), request lines.
 */
export function fastifyLogOptions(
  config: Pick<BrokerConfig, 'logLevel' | 'logFormat'>,
  output?: LogOutput,
  isTerminal = process.stdout.isTTY === true,
): Pick<FastifyServerOptions, 'logger' | 'logController'> {
  if (config.logLevel === 'silent') return { logger: false };
  const format = logFormatOf(config.logFormat, isTerminal);
  // JSON to stdout keeps pino's own destination (synchronous writes to fd 1, its fast path).
  const stream =
    format === 'pretty'
      ? { stream: prettyDestination(output ?? process.stdout) }
      : output === undefined
        ? {}
        : { stream: output };
  return {
    logger: {
      level: config.logLevel,
      ...stream,
      hooks: {
        logMethod(args, method) {
          if (args.length === 1 && args[0] === FASTIFY_LISTENING_TEXT) return;
          method.apply(this, args);
        },
      },
    },
    logController: new RequestLogController(),
  };
}

/**
 * The one line the broker prints when it serves, whatever the log level: the README's text as it
 * is in pretty form, and in JSON form the same text as the `msg` of an `info` record with the
 * endpoints as a field, so that a JSON log stays JSON from its first line.
 */
export function startLine(
  format: LogFormat,
  text: string,
  fields: Readonly<Record<string, unknown>>,
  nowMs: number,
): string {
  if (format === 'pretty') return text;
  return JSON.stringify({ level: INFO_LEVEL, time: nowMs, ...fields, msg: text });
}
