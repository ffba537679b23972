/**
 * Work that must happen when this process ends, however it ends short of SIGKILL: killing servers
 * still running and removing their files. An `exit` hook alone is not enough: vitest ends its
 * worker processes with SIGTERM, and a signal's default action ends a process without `exit`.
 *
 * The signal listeners are there only while a hook is registered. After running the hooks, a
 * listener re-raises its signal if no other listener remains, so the process still ends the way it
 * would have without us; if the program has listeners of its own, the decision stays theirs.
 */
const hooks = new Set<() => void>();

/** The signals that end a process by default and that a test run sends (Ctrl-C, a killed terminal, vitest). */
const ENDING_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * Run `hook` when this process ends, if it has not been removed by then. It runs synchronously and
 * must not throw; nothing can wait at that point.
 *
 * @returns a function that removes the hook (call it once the work is done another way).
 */
export function onProcessEnd(hook: () => void): () => void {
  if (hooks.size === 0) listen();
  hooks.add(hook);
  return () => {
    if (hooks.delete(hook) && hooks.size === 0) unlisten();
  };
}

function runHooks(): void {
  const pending = [...hooks];
  hooks.clear();
  unlisten();
  for (const hook of pending) hook();
}

function onSignal(signal: NodeJS.Signals): void {
  runHooks();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function listen(): void {
  process.on('exit', runHooks);
  for (const signal of ENDING_SIGNALS) process.on(signal, onSignal);
}

function unlisten(): void {
  process.off('exit', runHooks);
  for (const signal of ENDING_SIGNALS) process.off(signal, onSignal);
}
