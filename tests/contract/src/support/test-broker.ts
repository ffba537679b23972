import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, type BrokerConfigInput, buildBroker } from '@ricochet/broker';
import { AdminApi } from './admin.js';
import { storeFor } from './test-store.js';
import type { TransportName } from './transports.js';

/** A broker listening on 127.0.0.1:0 over a temporary data directory, for one test. */
export interface TestBroker extends AsyncDisposable {
  readonly broker: Broker;
  /** The WebSocket endpoint clients take, `ws://127.0.0.1:<port>`. */
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
  const testBroker: TestBroker = {
    broker,
    endpoint: url,
    endpointFor(transport) {
      switch (transport) {
        case 'ws':
          return url;
        case 'tcp':
          return tcpUrl ?? '';
        case 'http':
          // The HTTP transport shares the main port: POST /v1/frames (docs/protocol/transports.md#http).
          return url.replace(/^ws/, 'http');
      }
    },
    admin: new AdminApi(`http://127.0.0.1:${port}`),
    dataDir: directory,
    async restart() {
      removeOnClose = false;
      await broker.close();
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
      await broker.close();
      if (removeOnClose) rmSync(directory, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]() {
      return testBroker.close();
    },
  };
  return testBroker;
}
