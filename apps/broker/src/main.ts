#!/usr/bin/env node
import { buildBroker } from './app.js';
import { runBackupCommand } from './backup-command.js';
import { parseCommandLine } from './config.js';

/**
 * `ricochet-broker`: parse flags and RICOCHET_* variables, listen, print the URL, and drain on
 * SIGTERM/SIGINT. Everything else lives in `buildBroker`. `ricochet-broker backup …` copies a
 * data directory instead (`backup-command.ts`).
 */
async function main(): Promise<void> {
  if (process.argv[2] === 'backup') {
    const { exitCode, output } = await runBackupCommand(process.argv.slice(3));
    (exitCode === 0 ? console.log : console.error)(output);
    process.exitCode = exitCode;
    return;
  }
  const parsed = parseCommandLine(process.argv.slice(2), process.env);
  if (parsed.ok === 'help') {
    console.log(parsed.message);
    return;
  }
  if (!parsed.ok) {
    console.error(`ricochet-broker: ${parsed.message}`);
    process.exitCode = 2;
    return;
  }
  const broker = await buildBroker(parsed.config);
  const address = await broker.listen();
  console.log(`ricochet-broker listening on ${address.url} (data in ${parsed.config.dataDir})`);

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
}

main().catch((error: unknown) => {
  console.error('ricochet-broker: failed to start', error);
  process.exit(1);
});
