#!/usr/bin/env node
import { hostname } from 'node:os';
import { buildBroker } from './app.js';
import { BrokerStartError } from './auth/startup-auth.js';
import { runTokenCommand } from './auth/token-command.js';
import { runBackupCommand } from './backup-command.js';
import { standbyFor } from './cluster/index.js';
import { parseCommandLine } from './command-line.js';
import { logFormatOf, startLine } from './log-format.js';
import { describeStore } from './store/open-store.js';

/**
 * `ricochet-broker`: parse flags and RICOCHET_* variables, listen, print the URL, reload the auth
 * file and the TLS certificate on SIGHUP, and drain on SIGTERM/SIGINT. Everything else lives in
 * `buildBroker`. `ricochet-broker token --name <name>` prints a new token instead, and
 * `ricochet-broker backup …` copies a data directory (`backup-command.ts`).
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === 'token') {
    const result = runTokenCommand(args.slice(1));
    if (result.ok === false) {
      console.error(`ricochet-broker token: ${result.message}`);
      process.exitCode = 2;
    } else console.log(result.ok === 'help' ? result.message : result.output);
    return;
  }
  if (args[0] === 'backup') {
    const { exitCode, output } = await runBackupCommand(args.slice(1));
    (exitCode === 0 ? console.log : console.error)(output);
    process.exitCode = exitCode;
    return;
  }
  const parsed = parseCommandLine(args, process.env);
  if (parsed.ok === 'help') {
    console.log(parsed.message);
    return;
  }
  if (!parsed.ok) {
    console.error(`ricochet-broker: ${parsed.message}`);
    process.exitCode = 2;
    return;
  }
  // On a shared store, listen at once: until this broker owns the store it relays its clients to
  // the owner (cluster/standby/standby.ts), and it keeps the port when it takes over.
  const standby = await standbyFor(parsed.config);
  const config = standby?.config ?? parsed.config;
  // Printed whatever the log level (scripts and supervisors wait for them), in the log's format.
  const format = logFormatOf(config.logFormat, process.stdout.isTTY === true);
  const announce = (text: string, endpoints: readonly string[]) =>
    console.log(
      startLine(
        format,
        text,
        { pid: process.pid, hostname: hostname(), endpoints, store: describeStore(config) },
        Date.now(),
      ),
    );
  if (standby) {
    const tcp = standby.tcpUrl === undefined ? [] : [standby.tcpUrl];
    announce(
      `ricochet-broker standing by on ${[standby.relay.url, ...tcp].join(', ')}: relaying clients to the store's owner until this broker owns it`,
      [standby.relay.url, ...tcp],
    );
  }
  let broker: Awaited<ReturnType<typeof buildBroker>>;
  try {
    broker = await buildBroker(config, {
      // Another broker took the store over, or it stayed unreachable: stop, so that a supervisor
      // restarts this one as a standby instead of it serving what it can no longer store.
      onStoreLost: () => {
        void broker.close().finally(() => process.exit(1));
      },
    });
  } catch (error) {
    await standby?.close();
    if (!(error instanceof BrokerStartError)) throw error;
    console.error(`ricochet-broker: ${error.message}`);
    process.exitCode = 2;
    return;
  }
  // Before the broker announces itself: a supervisor may stop it the moment it reads the line,
  // and without a handler SIGTERM ends the process at once, the store's lease kept until it expires.
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      console.error(`ricochet-broker: second ${signal}, exiting without draining`);
      process.exit(1);
    }
    broker.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('ricochet-broker: drain failed', error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // SIGHUP re-reads what may change under a running broker; a bad file is refused (and logged by
  // the broker) and the old one stays in force. Without a handler SIGHUP would end the process.
  // Both reloads log their outcome (`auth file reloaded`, `TLS certificate reloaded`, or why not).
  process.on('SIGHUP', () => {
    void broker.reloadAuth();
    void broker.reloadTls();
  });
  // The ports change hands: clients that were waiting for an owner are served by this broker.
  await standby?.stopListening();
  const address = await broker.listen();
  await standby?.handOver(broker);
  announce(
    `ricochet-broker listening on ${address.endpoints.join(', ')} (${describeStore(config)})`,
    address.endpoints,
  );
}

main().catch((error: unknown) => {
  console.error('ricochet-broker: failed to start', error);
  process.exit(1);
});
