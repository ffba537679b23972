import { type BrokerConfig, brokerConfigSchema, NETWORK_LIMITS_FLAGS } from './config.js';

// The broker's command line: its flags and their `RICOCHET_*` environment variables, read into a
// `BrokerConfig` that `config.ts`'s schema checks and completes with defaults.

/** The outcome of {@link parseCommandLine}. */
export type CommandLineParse =
  | { readonly ok: true; readonly config: BrokerConfig }
  | { readonly ok: false; readonly message: string }
  | { readonly ok: 'help'; readonly message: string };

/** Command-line flags and the config field each sets; `RICOCHET_<FIELD>` in SCREAMING_SNAKE_CASE sets it too. */
const FLAGS: Record<string, keyof BrokerConfig> = {
  '--port': 'port',
  '--host': 'host',
  '--tcp-port': 'tcpPort',
  '--grpc-port': 'grpcPort',
  '--grpc-long-polling-timeout-ms': 'grpcLongPollingTimeoutMs',
  '--data-dir': 'dataDir',
  '--flush-policy': 'flushPolicy',
  '--store': 'store',
  '--store-lease-ms': 'storeLeaseMs',
  '--store-queues': 'storeQueues',
  '--store-spread': 'storeSpread',
  '--store-standbys': 'storeStandbys',
  '--advertise-url': 'advertiseUrl',
  '--advertise-tcp-url': 'advertiseTcpUrl',
  '--max-body-bytes': 'maxBodyBytes',
  '--dedup-window-ms': 'dedupWindowMs',
  '--max-delay-ms': 'maxDelayMs',
  '--auto-create-topics': 'autoCreateTopics',
  '--auto-create-groups': 'autoCreateGroups',
  '--delivery-history': 'deliveryHistory',
  '--auth-file': 'authFile',
  '--allow-unauthenticated': 'allowUnauthenticated',
  '--auth-tokens': 'authTokens',
  '--hello-timeout-ms': 'helloTimeoutMs',
  '--drain-timeout-ms': 'drainTimeoutMs',
  '--max-ready-queue-per-group': 'maxReadyQueuePerGroup',
  '--retention-check-interval-ms': 'retentionCheckIntervalMs',
  '--min-free-disk-bytes': 'minFreeDiskBytes',
  '--max-store-bytes': 'maxStoreBytes',
  '--watermark-check-interval-ms': 'watermarkCheckIntervalMs',
  '--ui': 'ui',
  '--ui-dir': 'uiDir',
  '--log-level': 'logLevel',
  '--log-format': 'logFormat',
  ...NETWORK_LIMITS_FLAGS,
};

const BOOLEAN_FIELDS = new Set<keyof BrokerConfig>([
  'autoCreateTopics',
  'autoCreateGroups',
  'allowUnauthenticated',
  'storeSpread',
  'ui',
]);

/** `--no-<flag>` turns a boolean flag off: `--no-ui` is `--ui=false`. */
const NEGATED_PREFIX = '--no-';

export const USAGE = `Usage: ricochet-broker [flags]
       ricochet-broker token --name <name>    print a new token and its auth-file entry

Flags (each also settable as an environment variable, e.g. --data-dir ⇔ RICOCHET_DATA_DIR;
flags win over the environment):
${Object.entries(FLAGS)
  .map(([flag, field]) => `  ${flag.padEnd(30)} ${envNameOf(field)}`)
  .join('\n')}
  --no-ui                        RICOCHET_UI=false (no dashboard at /ui)
  --no-store-spread              RICOCHET_STORE_SPREAD=false (one owner of every queue, and standbys)
  --help                         print this text

ricochet-broker backup --data-dir <dir> --to <path>   copy a data directory, live (--help for more)`;

/** `dataDir` → `RICOCHET_DATA_DIR`. */
export function envNameOf(field: keyof BrokerConfig): string {
  return `RICOCHET_${field.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`;
}

/**
 * Read the broker's settings from flags (`--port 0` or `--port=0`) and `RICOCHET_*` environment
 * variables. This module is the only reader of `process.env` (through `main.ts`, which passes it in).
 * A bad flag or value is reported with the flag's or variable's name.
 */
export function parseCommandLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): CommandLineParse {
  const raw: Record<string, unknown> = {};
  const source = new Map<string, string>();
  for (const field of Object.values(FLAGS)) {
    const value = env[envNameOf(field)];
    if (value !== undefined && value !== '') {
      raw[field] = coerceRaw(field, value);
      source.set(field, envNameOf(field));
    }
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') return { ok: 'help', message: USAGE };
    const negated = `--${arg.slice(NEGATED_PREFIX.length)}`;
    if (arg.startsWith(NEGATED_PREFIX) && BOOLEAN_FIELDS.has(FLAGS[negated] as keyof BrokerConfig)) {
      const field = FLAGS[negated] as keyof BrokerConfig;
      raw[field] = false;
      source.set(field, arg);
      continue;
    }
    const [flag, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const field = FLAGS[flag];
    if (!field) return { ok: false, message: `unknown flag ${flag}\n\n${USAGE}` };
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (BOOLEAN_FIELDS.has(field) && (next === undefined || next.startsWith('--'))) value = 'true';
      else if (next === undefined) return { ok: false, message: `${flag} needs a value` };
      else {
        value = next;
        i++;
      }
    }
    raw[field] = coerceRaw(field, value);
    source.set(field, flag);
  }
  const parsed = brokerConfigSchema.safeParse(raw);
  if (parsed.success) return { ok: true, config: parsed.data };
  const lines = parsed.error.issues.map((issue) => {
    const field = String(issue.path[0] ?? '');
    return `${source.get(field) ?? field}: ${issue.message}`;
  });
  return { ok: false, message: `invalid configuration:\n  ${lines.join('\n  ')}` };
}

function coerceRaw(field: keyof BrokerConfig, value: string): unknown {
  if (field === 'authTokens')
    return value
      .split(',')
      .map((token) => token.trim())
      .filter(Boolean);
  if (BOOLEAN_FIELDS.has(field)) {
    // z.coerce.boolean would read "false" as true; spell the accepted words out instead.
    if (['true', '1', 'yes', 'on'].includes(value.toLowerCase())) return true;
    if (['false', '0', 'no', 'off'].includes(value.toLowerCase())) return false;
    return value;
  }
  return value;
}
