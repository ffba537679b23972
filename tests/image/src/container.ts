import { setTimeout as delay } from 'node:timers/promises';
import type { ReadinessAnswer } from '@ricochet/protocol';
import type { DockerDaemon } from './docker-daemon.js';

/** The broker's ports in a container sharing the host's network: free ports of the host. */
export interface BrokerPorts {
  readonly port: number;
  readonly tcpPort: number;
  readonly grpcPort: number;
}

/**
 * `docker run --detach --network host` of `image` with the broker on loopback at `ports` (the
 * image's RICOCHET_* defaults otherwise), `env` added, `volume` mounted at /var/lib/ricochet, and
 * the image's HEALTHCHECK run every second instead of every ten. @returns the container's id.
 */
export async function runBroker(
  daemon: DockerDaemon,
  image: string,
  options: { ports: BrokerPorts; volume: string; env?: Readonly<Record<string, string>> },
): Promise<string> {
  const env = {
    RICOCHET_HOST: '127.0.0.1',
    RICOCHET_PORT: String(options.ports.port),
    RICOCHET_TCP_PORT: String(options.ports.tcpPort),
    RICOCHET_GRPC_PORT: String(options.ports.grpcPort),
    ...options.env,
  };
  const { stdout } = await daemon.docker([
    'run',
    '--detach',
    '--network',
    'host',
    '--volume',
    `${options.volume}:/var/lib/ricochet`,
    '--health-interval',
    '1s',
    ...Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`]),
    image,
  ]);
  return stdout.trim();
}

/** One answer of `GET /readyz`, or `refused` while nothing listens. */
export type ReadyzReading = { readonly status: number; readonly body: ReadinessAnswer } | 'refused';

export async function readyz(port: number): Promise<ReadyzReading> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: (await response.json()) as ReadinessAnswer };
  } catch {
    return 'refused';
  }
}

/**
 * Poll `GET /readyz` every 50 ms until it answers 200, within `budgetMs`. @returns every distinct
 * reading on the way (in order) and the milliseconds it took; rejects with the container's log
 * when the broker is not ready in time or its container stopped.
 */
export async function untilReady(
  daemon: DockerDaemon,
  container: string,
  port: number,
  budgetMs: number,
): Promise<{ readings: ReadyzReading[]; elapsedMs: number }> {
  const startedAt = performance.now();
  const readings: ReadyzReading[] = [];
  while (performance.now() - startedAt < budgetMs) {
    const reading = await readyz(port);
    if (JSON.stringify(reading) !== JSON.stringify(readings.at(-1))) readings.push(reading);
    if (reading !== 'refused' && reading.status === 200) {
      return { readings, elapsedMs: Math.round(performance.now() - startedAt) };
    }
    if (reading === 'refused' && !(await isRunning(daemon, container))) break;
    await delay(50);
  }
  const logs = await daemon
    .docker(['logs', container])
    .catch((error: Error) => ({ stdout: error.message, stderr: '' }));
  throw new Error(
    `the broker was not ready within ${budgetMs} ms (${JSON.stringify(readings)}):\n${logs.stdout}${logs.stderr}`,
  );
}

async function isRunning(daemon: DockerDaemon, container: string): Promise<boolean> {
  const { stdout } = await daemon.docker(['inspect', '--format', '{{.State.Running}}', container]);
  return stdout.trim() === 'true';
}

/** The container's `docker inspect --format` of `template`, trimmed. */
export async function inspect(daemon: DockerDaemon, target: string, template: string): Promise<string> {
  return (await daemon.docker(['inspect', '--format', template, target])).stdout.trim();
}

/** Until the container's health check says `healthy` (within `budgetMs`); its last status. */
export async function untilHealthy(
  daemon: DockerDaemon,
  container: string,
  budgetMs: number,
): Promise<string> {
  const startedAt = performance.now();
  let status = '';
  while (performance.now() - startedAt < budgetMs) {
    status = await inspect(daemon, container, '{{.State.Health.Status}}');
    if (status === 'healthy') return status;
    await delay(200);
  }
  return status;
}
