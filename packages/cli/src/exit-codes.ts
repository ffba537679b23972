/**
 * What `ricochet` exits with, so scripts can branch on the kind of failure without reading the
 * message. Documented in docs/guides/cli.md; a value once published is never given another meaning.
 */
export const EXIT_CODES = {
  /** Done. Also the end of `tail` and `stats` by Ctrl-C or SIGTERM. */
  OK: 0,
  /** The command line is wrong (unknown command or flag, missing argument): nothing was sent. */
  USAGE: 1,
  /** The topic, group, message or DLQ entry does not exist (HTTP 404). */
  NOT_FOUND: 2,
  /** The broker wants a token, or does not know the one given (HTTP 401). */
  UNAUTHORIZED: 3,
  /** The token is known but its principal may not do this (HTTP 403). */
  FORBIDDEN: 4,
  /** The broker cannot be reached, did not answer in time, or is shutting down (HTTP 503). */
  UNAVAILABLE: 5,
  /** The broker refused the request as invalid: a bad config, a body too large, throttling. */
  REJECTED: 6,
  /** Anything else: an internal broker error, an unexpected answer, a redrive that did not finish. */
  FAILED: 7,
} as const;

export type ExitCodeName = keyof typeof EXIT_CODES;
export type ExitCode = (typeof EXIT_CODES)[ExitCodeName];
