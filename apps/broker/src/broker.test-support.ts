import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, type BuildBrokerOptions, buildBroker } from './app.js';
import type { BrokerConfigInput } from './config.js';

/** A listening broker on 127.0.0.1:0 with a fresh data directory, removed on dispose. */
export async function startTestBroker(
  config: BrokerConfigInput = {},
  options: BuildBrokerOptions = {},
): Promise<Broker & { readonly url: string; readonly dataDir: string }> {
  const dataDir = config.dataDir ?? mkdtempSync(join(tmpdir(), 'ricochet-broker-'));
  const broker = await buildBroker(
    { host: '127.0.0.1', port: 0, logLevel: 'silent', ...config, dataDir },
    options,
  );
  const { url } = await broker.listen();
  const closeBroker = broker.close;
  const close = async () => {
    await closeBroker();
    if (config.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
  };
  return Object.assign(broker, { url, dataDir, close, [Symbol.asyncDispose]: close });
}

/** Create or update a group over the admin API; fails unless the broker answers 200. */
export async function putGroup(
  broker: Pick<Broker, 'address'>,
  group: string,
  config: Record<string, unknown>,
): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/groups/${group}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(config),
  });
  if (response.status !== 200)
    throw new Error(`PUT group ${group}: ${response.status} ${await response.text()}`);
}
