import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { platform } from 'node:os';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ORPHAN_GUARD } from '../../../bench/src/processes.js';

/**
 * `bench/src/orphan-guard.mjs`, preloaded into every process the bench starts: a process whose
 * bench died without stopping it ends itself, instead of running on and taking CPU from every
 * later run on the machine.
 */

const GUARD = pathToFileURL(ORPHAN_GUARD).href;
/** A process that would run forever: only a signal ends it. */
const FOREVER = 'setInterval(() => {}, 1_000)';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves with whether `pid` ended within `timeoutMs`, looking every 100 ms. */
async function endsWithin(pid: number, timeoutMs: number): Promise<boolean> {
  for (let waited = 0; waited <= timeoutMs; waited += 100) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !alive(pid);
}

describe.runIf(platform() === 'linux')('the bench orphan guard', () => {
  it('ends a process once the process that started it is gone', async () => {
    // A parent that starts a guarded child, prints its pid and exits without stopping it, as a
    // bench killed mid-run would.
    const parentScript = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['--import', ${JSON.stringify(GUARD)}, '-e', ${JSON.stringify(FOREVER)}], {
        stdio: 'ignore',
        env: { ...process.env, RICOCHET_BENCH_PARENT_PID: String(process.pid) },
      });
      console.log(child.pid);
      process.exit(0);
    `;
    const parent = spawn(process.execPath, ['-e', parentScript], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    parent.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await once(parent, 'exit');
    const orphan = Number(output.trim());
    expect(orphan).toBeGreaterThan(0);
    try {
      expect(await endsWithin(orphan, 10_000)).toBe(true);
    } finally {
      if (alive(orphan)) process.kill(orphan, 'SIGKILL');
    }
  });

  it('leaves a process alone while the process that started it lives', async () => {
    const child = spawn(process.execPath, ['--import', GUARD, '-e', FOREVER], {
      stdio: 'ignore',
      env: { ...process.env, RICOCHET_BENCH_PARENT_PID: String(process.pid) },
    });
    const pid = child.pid ?? 0;
    try {
      // Past two of the guard's checks (one a second).
      expect(await endsWithin(pid, 2_500)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit').catch(() => undefined);
    }
  });
});
