import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@ricochet/postgres-testkit';
import { ensureDebianPackage } from './debian-package.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

// The server script itself, not /usr/sbin's wrapper, which would switch to the `rabbitmq` user
// and its system directories.
const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server';
const READY_TIMEOUT_MS = 90_000;

export interface RabbitMqServer extends AsyncDisposable {
  readonly url: string;
  readonly durability: string;
  stop(): Promise<void>;
}

/**
 * RabbitMQ on 127.0.0.1, everything in a fresh temp dir: node name, mnesia and logs, its Erlang
 * cookie (HOME), config, plugins (none). Erlang's port mapper (epmd) would normally start as a
 * daemon that outlives the node, so the bench starts one of its own in the foreground on a free
 * port (ERL_EPMD_PORT) and stops it with the node: no epmd or beam process survives the bench.
 */
export async function startRabbitMqServer(): Promise<RabbitMqServer> {
  ensureDebianPackage(RABBITMQ_SERVER, 'rabbitmq-server');
  const epmdExecutable = ensureDebianPackage('epmd', 'erlang-base');
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-rabbitmq-'));
  const [amqpPort, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  const nodeName = `ricochet-bench-${process.pid}-${amqpPort}@localhost`;
  mkdirSync(join(dataDir, 'home'));
  writeFileSync(join(dataDir, 'enabled_plugins'), '[].\n');
  writeFileSync(join(dataDir, 'rabbitmq-env.conf'), '');
  writeFileSync(
    join(dataDir, 'rabbitmq.conf'),
    [`listeners.tcp.default = 127.0.0.1:${amqpPort}`, 'loopback_users = none', ''].join('\n'),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: join(dataDir, 'home'),
    ERL_EPMD_PORT: String(epmdPort),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_NODENAME: nodeName,
    RABBITMQ_USE_LONGNAME: 'false',
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dataDir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dataDir, 'log'),
    RABBITMQ_PID_FILE: join(dataDir, 'rabbitmq.pid'),
    RABBITMQ_CONFIG_FILE: join(dataDir, 'rabbitmq'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dataDir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dataDir, 'enabled_plugins'),
    RABBITMQ_CONF_ENV_FILE: join(dataDir, 'rabbitmq-env.conf'),
  };
  const epmd = await startServerProcess(
    epmdExecutable,
    ['-d', '-port', String(epmdPort), '-address', '127.0.0.1'],
    {
      env,
      ready: /epmd running/,
      readyTimeoutMs: 10_000,
      dataDir: join(dataDir, 'epmd-none'),
    },
  );
  let rabbit: ServerProcess;
  try {
    rabbit = await startServerProcess(RABBITMQ_SERVER, [], {
      env,
      cwd: dataDir,
      ready: /Starting broker\.\.\. completed/,
      readyTimeoutMs: READY_TIMEOUT_MS,
      dataDir,
    });
  } catch (error) {
    await epmd.stop();
    throw error;
  }
  const version = /RabbitMQ (\d+\.\d+\.\d+)/.exec(rabbit.output())?.[1] ?? '?';
  const stop = async () => {
    await rabbit.stop();
    await epmd.stop();
    await reapLeftovers(nodeName);
  };
  return {
    url: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
    durability: `RabbitMQ ${version}, quorum queues (Raft log fsynced before a publisher confirm, like ours), persistent messages`,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** The processes whose environment holds our unique node name: the node's and nothing else. */
function processesOfNode(nodeName: string): number[] {
  const marker = `RABBITMQ_NODENAME=${nodeName}\0`;
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker);
      } catch {
        return false; // gone, or not ours to read
      }
    })
    .map(Number);
}

const LEFTOVER_WAIT_MS = 5_000;

/**
 * Erlang's helpers (erl_child_setup, inet_gethost) run in sessions of their own, out of the node's
 * process group; they exit when the node closes their pipes. Wait (bounded) for that, then kill any
 * still there by pid: every one of them carries our node name in its environment.
 */
async function reapLeftovers(nodeName: string): Promise<void> {
  const deadline = performance.now() + LEFTOVER_WAIT_MS;
  while (processesOfNode(nodeName).length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const pid of processesOfNode(nodeName)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
}
