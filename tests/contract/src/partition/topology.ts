import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPostgresBinaries } from '@ricochet/postgres-testkit';

/**
 * A network of namespaces for the partition tests: a bridge in the root namespace (which the test
 * process, its clients and its checks live in) holding `<subnet>.1`, and one namespace per host,
 * each joined to the bridge by a veth pair, with `<subnet>.<n>` on its `eth0`. Every name starts
 * with {@link PREFIX} and this process's pid, so a run that crashed is cleaned up by the next
 * ({@link removeLeftovers}) and never mistaken for a run still going.
 *
 * A cut between two hosts is a permanent neighbour entry on each side pointing the other's address
 * at a MAC no one has: their frames to each other vanish on the bridge, silently, both ways, as
 * in a real partition (connections hang; nothing is refused), while each still reaches every
 * other host and the root namespace. The machines these tests run on have no netfilter tools and
 * no tc classifiers or actions, so a cut cannot be a firewall rule or a tc drop; `ip neigh` and
 * namespaces are all it takes.
 */
export const PREFIX = 'rcpt';
/** The MAC a cut host's frames are sent to: locally administered, on no interface. */
const NOWHERE_MAC = '02:00:5e:00:77:77';

export interface Host {
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
}

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Whether this machine lets us make namespaces: root, and `ip netns add` works. The reason when not. */
export function namespacesAllowed(): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'not running as root' };
  const probe = `${PREFIX}probe${process.pid.toString(36)}`;
  try {
    ip(['netns', 'add', probe]);
    ip(['netns', 'del', probe]);
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `ip netns add failed: ${(error as Error).message}` };
  }
}

/** Delete the namespaces and bridges of runs whose process is gone. */
export function removeLeftovers(): void {
  const alive = (id: string) => {
    try {
      process.kill(Number.parseInt(id, 36), 0);
      return true;
    } catch {
      return false;
    }
  };
  const pattern = new RegExp(`^${PREFIX}([0-9a-z]+)[-b]`);
  for (const line of ip(['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const id = pattern.exec(name)?.[1];
    if (id !== undefined && !alive(id)) ip(['netns', 'del', name]);
  }
  for (const line of ip(['-o', 'link', 'show', 'type', 'bridge']).split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1] ?? '';
    const id = new RegExp(`^${PREFIX}([0-9a-z]+)br$`).exec(name)?.[1];
    if (id !== undefined && !alive(id)) ip(['link', 'del', name]);
  }
}

/** The network of one run: hosts made on demand, cuts made and healed, everything deleted at the end. */
export class Topology {
  readonly subnet: string;
  readonly rootIp: string;
  readonly #id = process.pid.toString(36);
  readonly #bridge = `${PREFIX}${this.#id}br`;
  readonly #hosts = new Map<string, Host>();

  constructor() {
    // A /24 per run, from the pid: two runs at once (unlikely) would not share addresses.
    this.subnet = `10.77.${20 + (process.pid % 200)}`;
    this.rootIp = `${this.subnet}.1`;
    removeLeftovers();
    ip(['link', 'add', this.#bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${this.rootIp}/24`, 'dev', this.#bridge]);
    ip(['link', 'set', this.#bridge, 'up']);
  }

  /** A namespace `name` with address `<subnet>.<octet>`, on the bridge. */
  addHost(name: string, octet: number): Host {
    const netns = `${PREFIX}${this.#id}-${name}`;
    const veth = `${PREFIX}${this.#id}${name}`.slice(0, 15);
    const host = { name, netns, ip: `${this.subnet}.${octet}` };
    ip(['netns', 'add', netns]);
    this.#hosts.set(name, host);
    ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    ip(['link', 'set', veth, 'master', this.#bridge, 'up']);
    ip(['-n', netns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0']);
    ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
    ip(['-n', netns, 'link', 'set', 'lo', 'up']);
    return host;
  }

  /** Cut `a` and `b` off from each other, both ways; each still reaches every other host. */
  cut(a: Host, b: Host): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      ip([
        '-n',
        from.netns,
        'neigh',
        'replace',
        to.ip,
        'lladdr',
        NOWHERE_MAC,
        'dev',
        'eth0',
        'nud',
        'permanent',
      ]);
    }
  }

  /** Undo {@link cut}: each learns the other's MAC again (ARP). */
  heal(a: Host, b: Host): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      ip(['-n', from.netns, 'neigh', 'del', to.ip, 'dev', 'eth0']);
    }
  }

  /** Delete every namespace and the bridge (their veths go with them). Never throws. */
  destroy(): void {
    for (const host of this.#hosts.values()) {
      try {
        ip(['netns', 'del', host.netns]);
      } catch {
        // Gone already.
      }
    }
    try {
      ip(['link', 'del', this.#bridge]);
    } catch {
      // Gone already.
    }
  }
}

/**
 * `command args` in `host`'s namespace, tied to this process: `ip netns exec` and `setpriv` both
 * exec in place, so the child's pid is the program's own and a kill of this handle reaches it,
 * and `--pdeathsig KILL` has the kernel kill it should this process die first.
 */
export function spawnIn(
  host: Host,
  command: string,
  args: readonly string[],
  options: {
    readonly cwd: string;
    readonly env?: NodeJS.ProcessEnv;
    readonly user?: { uid: number; gid: number };
  },
): ChildProcess {
  const identity =
    options.user === undefined
      ? []
      : [`--reuid=${options.user.uid}`, `--regid=${options.user.gid}`, '--clear-groups'];
  return spawn(
    'ip',
    ['netns', 'exec', host.netns, 'setpriv', '--pdeathsig', 'KILL', ...identity, '--', command, ...args],
    {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
}

/** Resolves once `child`'s stdout printed a line matching `pattern`; rejects on exit or after `budgetMs`. */
export function printed(child: ChildProcess, pattern: RegExp, budgetMs: number): Promise<string> {
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) finish(() => resolve(match[0]));
    };
    const onExit = (code: number | null) =>
      finish(() => reject(new Error(`exited (${code}) before printing ${pattern}: ${output}`)));
    const timer = setTimeout(
      () => finish(() => reject(new Error(`did not print ${pattern} within ${budgetMs} ms: ${output}`))),
      budgetMs,
    );
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      settle();
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** SIGKILL `child` and wait for its exit (at once if it exited already). */
export async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** PostgreSQL in `host`'s namespace on its 127.0.0.1, and the delay link in front of it on `host.ip:5432`. */
export async function startPostgresIn(host: Host): Promise<{
  readonly url: string;
  readonly setLink: (delayMs: number, lossRate: number) => Promise<void>;
  readonly stop: () => Promise<void>;
}> {
  const binaries = findPostgresBinaries();
  if (binaries === undefined) throw new Error('PostgreSQL is not installed: apt-get install -y postgresql');
  const user = postgresUser();
  const baseDir = await mkdtemp(join(tmpdir(), 'ricochet-partition-pg-'));
  await chown(baseDir, user.uid, user.gid);
  const dataDir = join(baseDir, 'data');
  execFileSync(
    'setpriv',
    [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      '--clear-groups',
      '--',
      binaries.initdb,
      '-D',
      dataDir,
      '-U',
      'ricochet',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
    ],
    { cwd: baseDir, stdio: 'ignore' },
  );
  // The database never crashes in these tests (only the network fails): fsync off spares the disk.
  const server = spawnIn(
    host,
    binaries.postgres,
    [
      '-D',
      dataDir,
      '-k',
      baseDir,
      '-p',
      '5433',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=300',
      '-c',
      'shared_buffers=64MB',
    ],
    { cwd: baseDir, user },
  );
  server.stderr?.resume();
  const link = spawnIn(
    host,
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./delay-link.ts', import.meta.url)), host.ip, '5432', '5433'],
    { cwd: fileURLToPath(new URL('../..', import.meta.url)) },
  );
  link.stderr?.pipe(process.stderr);
  const stop = async () => {
    await Promise.all([killAndWait(link), killAndWait(server)]);
    await rm(baseDir, { recursive: true, force: true });
  };
  try {
    await printed(link, /relaying/, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  let queue = Promise.resolve();
  const setLink = (delayMs: number, lossRate: number) =>
    (queue = queue.then(async () => {
      const answered = printed(link, /ok\n/, 10_000);
      link.stdin?.write(`delay ${delayMs} ${lossRate}\n`);
      await answered;
    }));
  return { url: `postgres://ricochet@${host.ip}:5432`, setLink, stop };
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}
