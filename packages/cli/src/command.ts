import type { ParseArgsConfig } from 'node:util';
import type { CommandContext } from './command-context.js';

/** A command's flags, as `node:util` `parseArgs` takes them. */
export type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** The flags of a command after parsing: strings, booleans and repeated strings. */
export type OptionValues = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

/** What a command is given: the words after its name, and its flags. */
export interface CommandArgs {
  readonly positionals: readonly string[];
  readonly values: OptionValues;
}

/** A top-level command of `ricochet` (`topics`, `dlq`, `send` …). */
export interface Command {
  readonly name: string;
  /** Its actions or arguments, for `ricochet --help`: `ls | get | set`. */
  readonly synopsis: string;
  /** What it does, in one line for `ricochet --help`. */
  readonly summary: string;
  /** `ricochet <name> --help`: usage lines, the flags, an example. */
  readonly help: string;
  /** Its own flags; the global ones (`--endpoint`, `--token`, `--json`, `--help`) come on top. */
  readonly options: ParseArgsOptionsConfig;
  /** Run it; resolves with the exit code when it is not 0. */
  run(context: CommandContext, args: CommandArgs): Promise<number | undefined>;
}

/** A string flag's value, or `undefined`. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A repeatable string flag's values. */
export function stringListOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return typeof value === 'string' ? [value] : [];
}
