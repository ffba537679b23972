#!/usr/bin/env node
import { runCli } from './cli.js';

// Ctrl-C and SIGTERM end `tail` and `stats` cleanly (their consumer closed, exit 0); a second
// Ctrl-C while that takes long ends the process at once.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stop.signal.aborted) process.exit(130);
    stop.abort();
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: stop.signal,
});
// Nothing of the CLI's own is left running; stdin, if it was never read, must not hold the process.
process.stdin.unref?.();
