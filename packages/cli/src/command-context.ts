import { AdminApi } from './admin-api.js';
import type { BrokerEndpoint } from './broker-endpoint.js';
import type { CliIo } from './cli-io.js';

/** What every command runs with: the broker, the token, the output mode and the process's I/O. */
export interface CommandContext {
  readonly io: CliIo;
  readonly endpoint: BrokerEndpoint;
  readonly token: string | undefined;
  /** `--json`: machine-readable output only (one JSON document, or one per line for streams). */
  readonly json: boolean;
  readonly admin: AdminApi;
}

export function commandContext(
  io: CliIo,
  endpoint: BrokerEndpoint,
  token: string | undefined,
  json: boolean,
): CommandContext {
  return { io, endpoint, token, json, admin: new AdminApi(endpoint, token) };
}

/** Write a value as pretty JSON, the `--json` output of one-shot commands. */
export function writeJson(context: CommandContext, value: unknown): void {
  context.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
