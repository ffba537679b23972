export { findPostgresBinaries, type PostgresBinaries } from './find-postgres-binaries.js';
export { type PostgresServer, type StartPostgresOptions, startPostgres } from './postgres-server.js';
