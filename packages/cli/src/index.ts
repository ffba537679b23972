export { ADMIN_REQUEST_TIMEOUT_MS } from './admin-api.js';
export { type BrokerEndpoint, DEFAULT_ENDPOINT, parseBrokerEndpoint } from './broker-endpoint.js';
export { runCli } from './cli.js';
export { CliError } from './cli-error.js';
export type { CliIo, TextSink } from './cli-io.js';
export { TAIL_GROUP } from './commands/tail.js';
export { EXIT_CODES, type ExitCode, type ExitCodeName } from './exit-codes.js';
