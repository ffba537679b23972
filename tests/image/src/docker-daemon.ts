import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { spawnTied } from '@ricochet/postgres-testkit';
import { run } from './commands.js';

/** A Docker daemon of the test's own, and its CLI pointed at it. */
export interface DockerDaemon extends AsyncDisposable {
  /** `DOCKER_HOST` for the CLI (and `pnpm image`): this daemon's socket. */
  readonly host: string;
  /** Run `docker args` against this daemon (builds with BuildKit); rejects unless it exits 0. */
  docker(args: readonly string[], budgetMs?: number): ReturnType<typeof run>;
  /** SIGTERM, which stops its containers, then wait for the exit; the directories removed. */
  stop(): Promise<void>;
}

/**
 * Start `dockerd` with everything of its own under a temporary directory (socket, data, state,
 * pid file), so it never meets a daemon the machine runs: no bridge and no iptables rules, since
 * the test's containers share the host's network (`--network host`) and builds run without one.
 * Resolves once it answers `docker version`; tied to the test process, so a test killed midway
 * leaves no daemon behind.
 */
export async function startDockerDaemon(dockerd: string, docker: string): Promise<DockerDaemon> {
  const directory = mkdtempSync('/tmp/ricochet-dockerd-');
  const host = `unix://${join(directory, 'docker.sock')}`;
  const child = spawnTied(
    dockerd,
    [
      '--host',
      host,
      '--data-root',
      join(directory, 'data'),
      '--exec-root',
      join(directory, 'exec'),
      '--pidfile',
      join(directory, 'docker.pid'),
      '--iptables=false',
      '--ip-masq=false',
      '--bridge=none',
    ],
    { cwd: directory, identity: undefined },
  );
  let log = '';
  child.stderr.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
  });
  child.stdout.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // BuildKit asked for: this CLI's release builds with the legacy builder unless told.
  const dockerCli = (args: readonly string[], budgetMs = 120_000) =>
    run(docker, args, { budgetMs, env: { DOCKER_HOST: host, DOCKER_BUILDKIT: '1' } });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    // What dockerd may leave mounted under its directories (its network namespace, a layer).
    for (const mount of mountsUnder(directory)) await run('umount', ['--lazy', mount], { budgetMs: 30_000 });
    rmSync(directory, { recursive: true, force: true });
  };
  // Bounded: 300 tries of 100 ms, 30 s for a daemon that starts in about 1 s on an idle machine.
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) break;
    const answered = await run(docker, ['version', '--format', '{{.Server.Version}}'], {
      budgetMs: 10_000,
      env: { DOCKER_HOST: host },
    }).then(
      () => true,
      () => false,
    );
    if (answered) return { host, docker: dockerCli, stop, [Symbol.asyncDispose]: stop };
    await delay(100);
  }
  await stop();
  throw new Error(`dockerd did not start:\n${log}`);
}

/** Mount points under `directory`, deepest first, from /proc/self/mountinfo (field 5). */
function mountsUnder(directory: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mount) => mount.startsWith(`${directory}/`))
    .sort((a, b) => b.length - a.length);
}
