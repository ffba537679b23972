import { CliError, usageError } from './cli-error.js';
import type { CommandContext } from './command-context.js';

/**
 * The config fields a `set` command names: `field=value` words (the value read as JSON when it is
 * JSON — numbers, booleans, objects — else as a string) and `--config '<json object>'`, the words
 * winning over the object.
 * @throws CliError USAGE for a word without `=` or a `--config` that is not a JSON object.
 */
export function parseConfigAssignments(
  words: readonly string[],
  configJson: string | undefined,
  command: string,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (configJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(configJson);
    } catch (error) {
      throw usageError(`--config is not JSON: ${(error as Error).message}`, command);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw usageError('--config must be a JSON object, e.g. \'{"maxRetries":3}\'', command);
    }
    Object.assign(fields, parsed);
  }
  for (const word of words) {
    const equals = word.indexOf('=');
    if (equals <= 0) throw usageError(`expected field=value, got '${word}'`, command);
    const key = word.slice(0, equals);
    const raw = word.slice(equals + 1);
    fields[key] = parseValue(raw);
  }
  return fields;
}

function parseValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * The config of the topic or group at `path` now, or `undefined` when it does not exist yet: what a
 * `set` merges the named fields into, since the broker's PUT replaces the whole config.
 */
export async function currentConfigAt(
  context: CommandContext,
  path: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    return ((await context.admin.get(path)) as { config: Record<string, unknown> }).config;
  } catch (error) {
    if (error instanceof CliError && error.exit === 'NOT_FOUND') return undefined;
    throw error;
  }
}
