/** Where a text stream goes: the process's stdout/stderr, or a buffer in tests. */
export interface TextSink {
  write(text: string): unknown;
  /** A terminal: progress bars and refreshing screens; otherwise plain lines. */
  readonly isTTY?: boolean;
  /** The terminal's width, when it is one. */
  readonly columns?: number;
}

/** Everything a command touches outside itself, so that tests run commands in process. */
export interface CliIo {
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  /** The body of `send` when `--body` is absent. */
  readonly stdin: AsyncIterable<Uint8Array | string> & { readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Fires on Ctrl-C or SIGTERM: `tail` and `stats` stop and exit 0. */
  readonly signal: AbortSignal;
}
