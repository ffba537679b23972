import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Broker,
  type BrokerConfigInput,
  buildBroker,
  queuesSpread,
  type StandbyRelay,
  type StandbyTcpRelay,
  startStandbyRelay,
  startStandbyTcpRelay,
} from '@ricochet/broker';
import { AdminApi } from './admin.js';
import { onPostgres, storeFor, storeSpread } from './test-store.js';
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
  /**
   * The admin API of every broker of the test: one, or with queues spread three. Each broker's
   * `/metrics` counts the queues it owns, so a count over the cluster is a sum over these.
   */
  readonly everyAdmin: readonly AdminApi[];
  /** A retention pass on every broker of the test: each retains the queues it owns. */
  runRetentionPass(): Promise<{ readonly deletedMessages: number }>;
  /** A watermark check on every broker of the test: each refuses sends to the queues it owns. */
  checkWatermarks(): Promise<void>;
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
  const brokerConfig: BrokerConfigInput = {
    ...(await storeFor(directory)),
    ...config,
    host: '127.0.0.1',
    port: 0,
    tcpPort: 0,
    logLevel: 'silent',
  };
  const broker = await buildBroker({ ...brokerConfig, dataDir: directory });
  const { url, port, tcpUrl } = await broker.listen();
  let removeOnClose = dataDir === undefined;
  const spread = storeSpread();
  // On PostgreSQL the broker has two standbys relaying to it (DESIGN.md §9), or with queues spread
  // two more brokers sharing its queues; each client of a test, on any transport, gets the next of
  // the three: the producer on one broker, a consumer on another.
  const standbys = onPostgres() && !spread ? await startStandbys(url, tcpUrl) : [];
  const peers = spread ? await startSpreadPeers(brokerConfig, broker) : [];
  const webSocketEndpoints = [
    ...standbys.map((standby) => standby.relay.url),
    ...peers.map((peer) => peer.address?.url ?? ''),
    url,
  ];
  let nextWebSocket = 0;
  const webSocketEndpoint = () => webSocketEndpoints[nextWebSocket++ % webSocketEndpoints.length] ?? url;
  const tcpEndpoints = [
    ...standbys.map((standby) => (standby.tcpRelay ? `tcp://127.0.0.1:${standby.tcpRelay.port}` : undefined)),
    ...peers.map((peer) => peer.address?.tcpUrl),
    tcpUrl,
  ].filter((endpoint) => endpoint !== undefined);
  let nextTcp = 0;
  const tcpEndpoint = () => tcpEndpoints[nextTcp++ % tcpEndpoints.length] ?? '';
  const closeBroker = async () => {
    for (const standby of standbys) {
      await standby.relay.close();
      await standby.tcpRelay?.close();
    }
    for (const peer of peers) await peer.close();
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
    everyAdmin: [broker, ...peers].map((each) => new AdminApi(`http://127.0.0.1:${each.address?.port}`)),
    async runRetentionPass() {
      let deletedMessages = 0;
      for (const each of [broker, ...peers])
        deletedMessages += (await each.engine.runRetentionPass()).deletedMessages;
      return { deletedMessages };
    },
    async checkWatermarks() {
      for (const each of [broker, ...peers]) await each.engine.checkWatermarks();
    },
    dataDir: directory,
    async restart() {
      removeOnClose = false;
      await closeBroker();
      const next = await startBroker(config, directory);
      const closeNext = next.close;
      // The data directory now belongs to the new broker, which removes it when it closes (with
      // its standbys or the brokers sharing its queues).
      return Object.assign(next, {
        close: async () => {
          await closeNext();
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

/**
 * Two more brokers on the broker's store, its queues spread over the three (`--store-spread`),
 * each with a data directory of its own (removed when it closes); resolves once every queue is
 * owned by the broker it is assigned to and each of the three routes every queue somewhere.
 */
async function startSpreadPeers(config: BrokerConfigInput, first: Broker): Promise<Broker[]> {
  const peers: Broker[] = [];
  for (let i = 0; i < 2; i++) {
    const directory = mkdtempSync(join(tmpdir(), 'ricochet-contract-peer-'));
    const peer = await buildBroker({ ...config, dataDir: directory });
    const close = peer.close;
    peers.push(
      Object.assign(peer, {
        close: async () => {
          await close();
          rmSync(directory, { recursive: true, force: true });
        },
      }),
    );
    await peer.listen();
  }
  const brokers = [first, ...peers];
  // Bounded: 600 polls of 25 ms, 15 s, well past a few lease polls on a loaded machine.
  for (let poll = 0; poll < 600; poll++) {
    if (queuesSpread(brokers.map((broker) => broker.queueRoutes() ?? []))) return peers;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(
    `the queues did not settle over three brokers: ${JSON.stringify(brokers.map((b) => b.queueRoutes()))}`,
  );
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
