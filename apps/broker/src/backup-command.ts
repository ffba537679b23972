import { backupLmdbDataDir } from './store/lmdb-backup.js';

export const BACKUP_USAGE = `Usage: ricochet-broker backup --data-dir <dir> --to <path>

Writes a consistent, compacted copy of a data directory into <path> (a new or empty directory),
while a broker runs on it or not. Start a broker with --data-dir <path> to restore it.`;

/** The outcome of {@link runBackupCommand}: what to print, and the exit code. */
export interface CommandOutcome {
  readonly exitCode: number;
  readonly output: string;
}

/** `ricochet-broker backup …`: parse its two flags and copy the data directory. */
export async function runBackupCommand(argv: readonly string[]): Promise<CommandOutcome> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') return { exitCode: 0, output: BACKUP_USAGE };
    const [flag, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    if (flag !== '--data-dir' && flag !== '--to')
      return { exitCode: 2, output: `ricochet-broker backup: unknown flag ${flag}\n\n${BACKUP_USAGE}` };
    const value = inline ?? argv[++i];
    if (value === undefined || value === '')
      return { exitCode: 2, output: `ricochet-broker backup: ${flag} needs a value` };
    flags.set(flag, value);
  }
  const dataDir = flags.get('--data-dir');
  const to = flags.get('--to');
  if (dataDir === undefined || to === undefined)
    return {
      exitCode: 2,
      output: `ricochet-broker backup: --data-dir and --to are both required\n\n${BACKUP_USAGE}`,
    };
  try {
    const { file, bytes } = await backupLmdbDataDir(dataDir, to);
    return { exitCode: 0, output: `ricochet-broker backup: ${dataDir} copied to ${file} (${bytes} bytes)` };
  } catch (error) {
    return {
      exitCode: 1,
      output: `ricochet-broker backup: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}
