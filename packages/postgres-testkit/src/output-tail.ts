import type { Readable } from 'node:stream';

/** How many of a program's last output lines an error message quotes. */
const TAIL_LINES = 20;

/**
 * A child program's output, line by line: each line goes to `log` as it comes, and the last
 * {@link TAIL_LINES} are kept for the error message when the program fails.
 */
export class OutputTail {
  readonly #lines: string[] = [];
  readonly #log: ((line: string) => void) | undefined;

  constructor(log: ((line: string) => void) | undefined) {
    this.#log = log;
  }

  /** Read `stream` until it ends; a line split across chunks is joined first. */
  follow(stream: Readable, prefix: string): void {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.#add(prefix + line);
    });
    stream.on('end', () => {
      if (partial !== '') this.#add(prefix + partial);
      partial = '';
    });
  }

  /** The last lines, oldest first, one per line; `(no output)` when there were none. */
  text(): string {
    return this.#lines.length === 0 ? '(no output)' : this.#lines.join('\n');
  }

  #add(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > TAIL_LINES) this.#lines.shift();
    this.#log?.(line);
  }
}
