import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Broker,
  type BrokerConfigInput,
  buildBroker,
  type StandbyRelay,
  type StandbyTcpRelay,
  startStandbyRelay,
  startStandbyTcpRelay,
} from '@ricochet/broker';
import { AdminApi } from './admin.js';
import { onPostgres, storeFor } from './test-store.js';
import type { TransportName } from './transports.js';

/** A broker listening on 127.0.0.1:0 over a temporary data directory, for one test. */
export interface TestBroker extends AsyncDisposable {
  readonly broker: Broker;
  /**
   * The WebSocket endpoint clients take, `ws://127.0.0.1:<port>`. In the `contract-postgres`
   * project each read gives the next of three brokers: the broker and two standbys relaying to it.
   */
  readonly endpoint: string;
  /** The endpoint of `transport`: `ws://127.0.0.1:<port>`, the TCP listener's `tcp://127.0.0.1:<tcpPort>`, or `http://127.0.0.1:<port>`. */
  endpointFor(transport: TransportName): string;
  readonly admin: AdminApi;
  readonly dataDir: string;
  /** Close the broker (drain) and open a new one on the same data directory and port 0. */
  restart(): Promise<TestBroker>;
  close(): Promise<void>;
}

/**
 * Start a broker with its WebSocket endpoint and its TCP listener (both on free ports); `await
 * using` closes it and removes its data directory. In the `contract-postgres` project it stores on
 * a PostgreSQL database of its own, tied to the data directory (`test-store.ts`).
 */
export async function startBroker(config: BrokerConfigInput = {}, dataDir?: string): Promise<TestBroker> {
  const directory = dataDir ?? mkdtempSync(join(tmpdir(), 'ricochet-contract-'));
  const broker = await buildBroker({
    ...(await storeFor(directory)),
    ...config,
    host: '127.0.0.1',
    port: 0,
    tcpPort: 0,
    logLevel: 'silent',
    dataDir: directory,
  });
  const { url, port, tcpUrl } = await broker.listen();
  let removeOnClose = dataDir === undefined;
  const standbys = onPostgres() ? await startStandbys(url, tcpUrl) : [];
  // On PostgreSQL the broker has two standbys relaying to it (DESIGN.md §9), and each client of a
  // test, on any transport, gets the next of the three: the producer on one broker, a consumer on
  // another.
  const webSocketEndpoints = [...standbys.map((standby) => standby.relay.url), url];
  let nextWebSocket = 0;
  const webSocketEndpoint = () => webSocketEndpoints[nextWebSocket++ % webSocketEndpoints.length] ?? url;
  const tcpEndpoints = [
    ...standbys.map((standby) => (standby.tcpRelay ? `tcp://127.0.0.1:${standby.tcpRelay.port}` : undefined)),
    tcpUrl,
  ].filter((endpoint) => endpoint !== undefined);
  let nextTcp = 0;
  const tcpEndpoint = () => tcpEndpoints[nextTcp++ % tcpEndpoints.length] ?? '';
  const closeBroker = async () => {
    for (const standby of standbys) {
      await standby.relay.close();
      await standby.tcpRelay?.close();
    }
    await broker.close();
  };
  const testBroker: TestBroker = {
    broker,
    get endpoint() {
      return webSocketEndpoint();
    },
    endpointFor(transport) {
      switch (transport) {
        case 'ws':
          return webSocketEndpoint();
        case 'tcp':
          return tcpEndpoint();
        case 'http':
          // The HTTP transport shares the main port: POST /v1/frames (docs/protocol/transports.md#http).
          // On PostgreSQL, a standby forwards it to the broker like its WebSocket clients.
          return webSocketEndpoint().replace(/^ws/, 'http');
      }
    },
    admin: new AdminApi(`http://127.0.0.1:${port}`),
    dataDir: directory,
    async restart() {
      removeOnClose = false;
      await closeBroker();
      const next = await startBroker(config, directory);
      // The data directory now belongs to the new broker, which removes it when it closes.
      return Object.assign(next, {
        close: async () => {
          await next.broker.close();
          rmSync(directory, { recursive: true, force: true });
        },
      });
    },
    async close() {
      await closeBroker();
      if (removeOnClose) rmSync(directory, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]() {
      return testBroker.close();
    },
  };
  return testBroker;
}

/** Two standbys relaying to the broker (WebSocket, HTTP and TCP), as two more brokers on its store would. */
async function startStandbys(ownerUrl: string, ownerTcpUrl: string | undefined): Promise<TestStandby[]> {
  const standby = async (): Promise<TestStandby> => {
    const relay = await startStandbyRelay({
      host: '127.0.0.1',
      port: 0,
      maxFrameBytes: 64 * 1024 * 1024,
      findOwner: async () => ownerUrl,
    });
    const tcpRelay =
      ownerTcpUrl === undefined
        ? undefined
        : await startStandbyTcpRelay({ host: '127.0.0.1', port: 0, findOwner: async () => ownerTcpUrl });
    return { relay, tcpRelay };
  };
  return [await standby(), await standby()];
}

interface TestStandby {
  readonly relay: StandbyRelay;
  readonly tcpRelay: StandbyTcpRelay | undefined;
}
