import { EXIT_CODES, type ExitCodeName } from './exit-codes.js';

/**
 * A failure the CLI reports and exits on: its `message` says what went wrong, `hint` what to do
 * about it, and `exit` which of {@link EXIT_CODES} the process ends with.
 */
export class CliError extends Error {
  readonly exit: ExitCodeName;
  readonly hint: string | undefined;
  /** Extra lines shown under the message, e.g. each validation issue the broker listed. */
  readonly detailLines: readonly string[];

  constructor(
    exit: ExitCodeName,
    message: string,
    options: { hint?: string; detailLines?: readonly string[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.exit = exit;
    this.hint = options.hint;
    this.detailLines = options.detailLines ?? [];
  }

  get exitCode(): number {
    return EXIT_CODES[this.exit];
  }
}

/** A command line that cannot be run; the hint points at the help. */
export function usageError(message: string, command?: string): CliError {
  const help = command === undefined ? 'ricochet --help' : `ricochet ${command} --help`;
  return new CliError('USAGE', message, { hint: `see \`${help}\`` });
}
