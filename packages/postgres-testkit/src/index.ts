export { findPostgresBinaries, type PostgresBinaries } from './find-postgres-binaries.js';
export { freePort } from './free-port.js';
export { type PostgresServer, type StartPostgresOptions, startPostgres } from './postgres-server.js';
export { type PostgresStandby, type StartStandbyOptions, startStandby } from './postgres-standby.js';
export { spawnTied, type TiedSpawnOptions } from './tied-spawn.js';
