import { DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_DELAY_MS } from '@ricochet/protocol';
import { z } from 'zod';

/**
 * When a send is acknowledged. `fsync` (the default) answers after the commit holding the message
 * has been flushed to disk: it survives power loss. `commit` answers once the commit is visible,
 * while the flush runs in the background: it survives a crash of the broker process (the data is
 * in the OS page cache) but not of the machine.
 */
export const FLUSH_POLICIES = ['fsync', 'commit'] as const;
export type FlushPolicy = (typeof FLUSH_POLICIES)[number];

const MINUTE_MS = 60_000;

/** Every setting of the broker, with its default. Parsed once, here. */
export const brokerConfigSchema = z.object({
  /** TCP port; 0 picks a free one. @default 7720 */
  port: z.coerce.number().int().min(0).max(65_535).default(7720),
  /** Interface to bind. @default '127.0.0.1' */
  host: z.string().min(1).default('127.0.0.1'),
  /** Directory of the embedded store; created if missing. @default './ricochet-data' */
  dataDir: z.string().min(1).default('./ricochet-data'),
  /** @default 'fsync' */
  flushPolicy: z.enum(FLUSH_POLICIES).default('fsync'),
  /** The largest message body accepted. @default 4 MiB */
  maxBodyBytes: z.coerce
    .number()
    .int()
    .min(1)
    .max(64 * 1024 * 1024)
    .default(DEFAULT_MAX_BODY_BYTES),
  /** How long a message id is remembered to answer retried sends with the original receipt (R3). @default 5 min */
  dedupWindowMs: z.coerce
    .number()
    .int()
    .min(0)
    .default(5 * MINUTE_MS),
  /** The farthest ahead a delay message may be scheduled (T1). @default 24 h */
  maxDelayMs: z.coerce.number().int().min(0).default(DEFAULT_MAX_DELAY_MS),
  /** Create unknown topics on first send. @default true */
  autoCreateTopics: z.boolean().default(true),
  /** Create unknown groups on first use. @default true */
  autoCreateGroups: z.boolean().default(true),
  /** Tokens accepted in `hello`; empty means no authentication. @default [] */
  authTokens: z.array(z.string().min(1)).default([]),
  /** How long a new connection may take to send `hello`. @default 10 s */
  helloTimeoutMs: z.coerce.number().int().min(1).default(10_000),
  /** How long a SIGTERM/SIGINT drain waits for in-flight work before closing anyway. @default 10 s */
  drainTimeoutMs: z.coerce.number().int().min(0).default(10_000),
  /**
   * Due retries and expired leases queued in memory per group, waiting for a consumer. More stay
   * in the store's schedule until the queue drains, so a backlog of retries costs disk, not heap.
   * @default 10000
   */
  maxReadyQueuePerGroup: z.coerce.number().int().min(1).default(10_000),
  /** Serve the dashboard at `/ui` (`--no-ui` turns it off). @default true */
  ui: z.boolean().default(true),
  /**
   * The dashboard's built files. @default the bundle shipped beside the broker's code (`dist/ui`),
   * or the dashboard package's `dist` when running from this repository
   */
  uiDir: z.string().min(1).optional(),
  /** Log level of the broker's JSON log lines (pino, through Fastify). @default 'info' */
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** The broker's settings after defaults. */
export type BrokerConfig = z.infer<typeof brokerConfigSchema>;

/** Settings as a caller of `buildBroker` writes them: everything optional. */
export type BrokerConfigInput = z.input<typeof brokerConfigSchema>;

/** The outcome of {@link parseCommandLine}. */
export type CommandLineParse =
  | { readonly ok: true; readonly config: BrokerConfig }
  | { readonly ok: false; readonly message: string }
  | { readonly ok: 'help'; readonly message: string };

/** Command-line flags and the config field each sets; `RICOCHET_<FIELD>` in SCREAMING_SNAKE_CASE sets it too. */
const FLAGS: Record<string, keyof BrokerConfig> = {
  '--port': 'port',
  '--host': 'host',
  '--data-dir': 'dataDir',
  '--flush-policy': 'flushPolicy',
  '--max-body-bytes': 'maxBodyBytes',
  '--dedup-window-ms': 'dedupWindowMs',
  '--max-delay-ms': 'maxDelayMs',
  '--auto-create-topics': 'autoCreateTopics',
  '--auto-create-groups': 'autoCreateGroups',
  '--auth-tokens': 'authTokens',
  '--hello-timeout-ms': 'helloTimeoutMs',
  '--drain-timeout-ms': 'drainTimeoutMs',
  '--max-ready-queue-per-group': 'maxReadyQueuePerGroup',
  '--ui': 'ui',
  '--ui-dir': 'uiDir',
  '--log-level': 'logLevel',
};

const BOOLEAN_FIELDS = new Set<keyof BrokerConfig>(['autoCreateTopics', 'autoCreateGroups', 'ui']);

/** `--no-<flag>` turns a boolean flag off: `--no-ui` is `--ui=false`. */
const NEGATED_PREFIX = '--no-';

export const USAGE = `Usage: ricochet-broker [flags]

Flags (each also settable as an environment variable, e.g. --data-dir ⇔ RICOCHET_DATA_DIR;
flags win over the environment):
${Object.entries(FLAGS)
  .map(([flag, field]) => `  ${flag.padEnd(30)} ${envNameOf(field)}`)
  .join('\n')}
  --no-ui                        RICOCHET_UI=false (no dashboard at /ui)
  --help                         print this text`;

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

/** Fill defaults for an in-process broker (tests, embedding). @throws Error naming the bad field. */
export function resolveBrokerConfig(input: BrokerConfigInput = {}): BrokerConfig {
  const parsed = brokerConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new Error(
    `invalid broker config: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
  );
}
