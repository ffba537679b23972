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
const GIB = 1024 * 1024 * 1024;

// ---- TLS and connection limits (DESIGN.md §7, docs/guides/security.md): one block, kept together.

const KIB = 1024;
const MIB = 1024 * KIB;

/** Room a frame needs beyond its largest body: properties (16 KiB), ids, names and MessagePack framing. */
export const FRAME_OVERHEAD_BYTES = 64 * KIB;

/** The TLS and limit settings; spread into {@link brokerConfigSchema}. */
function networkLimitsFields() {
  const positiveInt = () => z.coerce.number().int().min(1);
  return {
    /** PEM certificate chain; with `tlsKey`, the port serves `wss://` and `https://`. Reloaded on SIGHUP. @default undefined (plain ws/http) */
    tlsCert: z.string().min(1).optional(),
    /** PEM private key of `tlsCert`. @default undefined */
    tlsKey: z.string().min(1).optional(),
    /** WebSocket connections open at once; one more is refused at the upgrade with HTTP 503. @default 10000 */
    maxConnections: positiveInt().default(10_000),
    /**
     * The largest WebSocket message read; a larger one closes the connection with 1009 as soon as
     * its header announces the length, before it is buffered. At least `maxBodyBytes` + 64 KiB.
     * @default max(16 MiB, maxBodyBytes + 1 MiB)
     */
    maxFrameBytes: positiveInt()
      .max(128 * MIB)
      .optional(),
    /** Requests of one connection being worked on at once; one more is answered `530`. @default 4096 */
    maxInflightRequestsPerConnection: positiveInt().default(4_096),
    /** Long-polling receives (awaitDurationMs > 0) of one connection waiting at once; one more is answered `530`. @default 64 */
    maxWaitingReceivesPerConnection: positiveInt().default(64),
    /** Push subscriptions open on one connection; one more is answered `400`. @default 256 */
    maxSubscriptionsPerConnection: positiveInt().default(256),
    /** How long an HTTP request (an upgrade included) may take to send its request line and headers. @default 10 s */
    httpHeadersTimeoutMs: positiveInt().default(10_000),
    /** How long an HTTP request may take from its first byte to its last (body included). @default 30 s */
    httpRequestTimeoutMs: positiveInt().default(30_000),
    /** How long a WebSocket message may take from its first byte to its last (all its fragments). @default 60 s */
    websocketMessageTimeoutMs: positiveInt().default(60_000),
  };
}

/** The TLS and limit flags, and the field each sets (`command-line.ts`). */
export const NETWORK_LIMITS_FLAGS = {
  '--tls-cert': 'tlsCert',
  '--tls-key': 'tlsKey',
  '--max-connections': 'maxConnections',
  '--max-frame-bytes': 'maxFrameBytes',
  '--max-inflight-requests-per-connection': 'maxInflightRequestsPerConnection',
  '--max-waiting-receives-per-connection': 'maxWaitingReceivesPerConnection',
  '--max-subscriptions-per-connection': 'maxSubscriptionsPerConnection',
  '--http-headers-timeout-ms': 'httpHeadersTimeoutMs',
  '--http-request-timeout-ms': 'httpRequestTimeoutMs',
  '--websocket-message-timeout-ms': 'websocketMessageTimeoutMs',
} as const;

function checkNetworkLimits(
  config: {
    tlsCert?: string | undefined;
    tlsKey?: string | undefined;
    maxFrameBytes?: number | undefined;
    maxBodyBytes: number;
    httpHeadersTimeoutMs: number;
    httpRequestTimeoutMs: number;
  },
  context: z.RefinementCtx,
): void {
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    const missing = config.tlsCert === undefined ? 'tlsCert' : 'tlsKey';
    context.addIssue({ code: 'custom', path: [missing], message: 'TLS needs both tlsCert and tlsKey' });
  }
  if (
    config.maxFrameBytes !== undefined &&
    config.maxFrameBytes < config.maxBodyBytes + FRAME_OVERHEAD_BYTES
  ) {
    context.addIssue({
      code: 'custom',
      path: ['maxFrameBytes'],
      message: `must be at least maxBodyBytes + ${FRAME_OVERHEAD_BYTES} (${config.maxBodyBytes + FRAME_OVERHEAD_BYTES}), so that the largest message fits in a frame`,
    });
  }
  // Node refuses a request timeout shorter than the headers timeout.
  if (config.httpRequestTimeoutMs < config.httpHeadersTimeoutMs) {
    context.addIssue({
      code: 'custom',
      path: ['httpRequestTimeoutMs'],
      message: 'must be at least httpHeadersTimeoutMs',
    });
  }
}

/** The frame limit in force: the configured one, else max(16 MiB, maxBodyBytes + 1 MiB). */
export function maxFrameBytesOf(config: Pick<BrokerConfig, 'maxFrameBytes' | 'maxBodyBytes'>): number {
  return config.maxFrameBytes ?? Math.max(16 * MIB, config.maxBodyBytes + MIB);
}

// ---- end of TLS and connection limits

/** Every setting of the broker, with its default. Parsed once, here. */
export const brokerConfigSchema = z
  .object({
    /** TCP port of the WebSocket endpoint and the HTTP API; 0 picks a free one. @default 7720 */
    port: z.coerce.number().int().min(0).max(65_535).default(7720),
    /**
     * Port of the TCP listener (`tcp://`, or `tls://` with `tlsCert`): the same frames as the
     * WebSocket endpoint, length-prefixed (docs/protocol/transports.md); 0 picks a free one.
     * @default undefined (no TCP listener)
     */
    tcpPort: z.coerce.number().int().min(0).max(65_535).optional(),
    /**
     * Port of the RocketMQ 5 endpoint: `apache.rocketmq.v2.MessagingService` over gRPC, for
     * Apache's official RocketMQ clients (docs/guides/rocketmq-clients.md); 0 picks a free one.
     * @default undefined (no gRPC listener)
     */
    grpcPort: z.coerce.number().int().min(0).max(65_535).optional(),
    /**
     * The longest long poll a RocketMQ receive is held for, and what RocketMQ consumers are told
     * to ask for (the RocketMQ proxy's own bound is 20 s). A push consumer's shutdown waits for
     * its polls to end, so shorter polls stop it sooner. @default 20000
     */
    grpcLongPollingTimeoutMs: z.coerce.number().int().min(100).max(60_000).default(20_000),
    /** Interface to bind. @default '127.0.0.1' */
    host: z.string().min(1).default('127.0.0.1'),
    /** Directory of the embedded store; created if missing. @default './ricochet-data' */
    dataDir: z.string().min(1).default('./ricochet-data'),
    /** @default 'fsync' */
    flushPolicy: z.enum(FLUSH_POLICIES).default('fsync'),
    /**
     * Where the durable state lives: absent for the embedded LMDB store in `dataDir`, or a
     * `postgres://user[:password]@host[:port]/database` URL for a PostgreSQL database (DESIGN.md
     * §9; docs/guides/scale-out.md). With PostgreSQL, `dataDir` holds only a local copy rebuilt at
     * every start. @default undefined (embedded)
     */
    store: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
    /**
     * With a PostgreSQL store: how long this broker's ownership of the store lasts without renewal.
     * A standby broker takes over this long after the owner stopped renewing (cut off, paused, its
     * machine gone); an owner whose process died (its database session ended) or that stopped
     * cleanly is replaced at once. @default 10 s
     */
    storeLeaseMs: z.coerce.number().int().min(100).default(10_000),
    /**
     * With a PostgreSQL store: how many queues every topic is split into, each a store of its own
     * with its own lease (DESIGN.md §9; docs/guides/scale-out.md). A message goes to the queue of
     * its message group, or of its id; consumers read every queue. Every broker of a cluster must
     * be given the same number, chosen when the cluster starts (a change moves message groups).
     * @default {@link DEFAULT_STORE_QUEUES} with a PostgreSQL store; 1 (the only choice) without
     */
    storeQueues: z.coerce.number().int().min(1).max(64).optional(),
    /**
     * With `storeQueues` above 1: spread the queues over the live brokers (DESIGN.md §9), each
     * owning those rendezvous hashing gives it and forwarding the rest to their owners, instead of
     * one broker owning every queue while the others stand by (`false`: active/standby). Every
     * broker of a cluster must be given the same setting. @default true with `storeQueues` above 1
     */
    storeSpread: z.boolean().optional(),
    /**
     * With the queues spread: how many brokers besides its owner keep a warm copy of each queue
     * (DESIGN.md §9), chosen by the same rendezvous hashing as owners, so each is the broker the
     * queue moves to should those before it go. A broker copies only the queues it owns or stands
     * by for, not every write of the cluster; a queue that falls to a broker without a copy (more
     * brokers gone at once than it has standbys) loads it from the database before serving.
     * Every broker of a cluster must be given the same number. @default 1
     */
    storeStandbys: z.coerce.number().int().min(0).max(7).default(1),
    /**
     * With a PostgreSQL store: the WebSocket URL other brokers give clients to reach this one while
     * it owns the store (a standby relays its clients there). @default the URL it listens on,
     * which only fits when that address is reachable from the other brokers
     */
    advertiseUrl: z
      .string()
      .regex(/^wss?:\/\//, 'must be a ws:// or wss:// URL')
      .optional(),
    /**
     * With a PostgreSQL store and `tcpPort`: the `tcp://` or `tls://` URL at which standbys relay TCP
     * clients to this broker while it owns the store. @default the TCP listener's port on the host
     * of `advertiseUrl`
     */
    advertiseTcpUrl: z
      .string()
      .regex(/^(tcp|tls):\/\//, 'must be a tcp:// or tls:// URL')
      .optional(),
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
    /**
     * Which ended deliveries a group's history keeps, for groups that do not say (their
     * `history`): `failures` keeps all but successes (failures, timeouts, expired leases,
     * releases, DLQ moves, held retries), `full` keeps successes too. @default 'failures'
     */
    deliveryHistory: z.enum(['failures', 'full']).default('failures'),
    // ─── Authentication and permissions (DESIGN.md §7; docs/guides/security.md) ────────────────
    /** The auth file: principals, their token digests and permissions; reloaded on SIGHUP. @default none (no authentication) */
    authFile: z.string().min(1).optional(),
    /** Listen on a non-loopback address without an auth file. @default false */
    allowUnauthenticated: z.boolean().default(false),
    /** Deprecated: tokens that may do everything; use `authFile`. Not with `authFile`. @default [] */
    authTokens: z.array(z.string().min(1)).default([]),
    // ─────────────────────────────────────────────────────────────────────────────────────────────
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
    /**
     * How often the retention pass deletes expired messages (DESIGN.md §5). Each pass works in small
     * batches and yields the event loop between them. @default 60 s
     */
    retentionCheckIntervalMs: z.coerce.number().int().min(1).default(MINUTE_MS),
    /**
     * Sends are refused with 530 while the data directory's file system has less free space than
     * this; consumption goes on. 0 turns the check off. @default 1 GiB
     */
    minFreeDiskBytes: z.coerce.number().int().min(0).default(GIB),
    /** Sends are refused with 530 while the store's data takes more than this. @default no limit */
    maxStoreBytes: z.coerce.number().int().min(1).optional(),
    /** How often free disk space and the store's size are read for the two limits above. @default 1 s */
    watermarkCheckIntervalMs: z.coerce.number().int().min(1).default(1_000),
    /** Serve the dashboard at `/ui` (`--no-ui` turns it off). @default true */
    ui: z.boolean().default(true),
    /**
     * The dashboard's built files. @default the bundle shipped beside the broker's code (`dist/ui`),
     * or the dashboard package's `dist` when running from this repository
     */
    uiDir: z.string().min(1).optional(),
    /**
     * Log level of the broker's log lines (pino, through Fastify); each HTTP request is a `debug`
     * line. @default 'info'
     */
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * Log lines as JSON objects or as pretty lines with the same fields (`log-format.ts`).
     * @default 'pretty' when stdout is a terminal, else 'json'
     */
    logFormat: z.enum(['json', 'pretty']).optional(),
    ...networkLimitsFields(),
  })
  .superRefine(checkNetworkLimits)
  .transform(withStoreDefaults)
  .superRefine((config, context) => {
    if (config.storeSpread && config.storeQueues < 2) {
      context.addIssue({
        code: 'custom',
        path: ['storeSpread'],
        message: 'spreading needs queues to spread: set storeQueues to 2 or more',
      });
    }
    if (config.storeQueues > 1 && config.store === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['storeQueues'],
        message: 'queues split a PostgreSQL store: set store to a postgres:// URL, or leave storeQueues at 1',
      });
    }
  });

/**
 * How many queues a PostgreSQL store is split into unless `storeQueues` says (DESIGN.md §9): enough
 * for up to 8 brokers to share the work, few enough that one broker owning them all pays little.
 */
export const DEFAULT_STORE_QUEUES = 8;

/**
 * The store settings whose defaults follow the others: a PostgreSQL store is split into
 * {@link DEFAULT_STORE_QUEUES} queues, and queues are spread over the brokers, unless told.
 */
function withStoreDefaults<
  T extends {
    store?: string | undefined;
    storeQueues?: number | undefined;
    storeSpread?: boolean | undefined;
  },
>(config: T): T & { storeQueues: number; storeSpread: boolean } {
  const storeQueues = config.storeQueues ?? (config.store === undefined ? 1 : DEFAULT_STORE_QUEUES);
  return { ...config, storeQueues, storeSpread: config.storeSpread ?? storeQueues > 1 };
}

/** The broker's settings after defaults. */
export type BrokerConfig = z.infer<typeof brokerConfigSchema>;

/** Settings as a caller of `buildBroker` writes them: everything optional. */
export type BrokerConfigInput = z.input<typeof brokerConfigSchema>;

/** Fill defaults for an in-process broker (tests, embedding). @throws Error naming the bad field. */
export function resolveBrokerConfig(input: BrokerConfigInput = {}): BrokerConfig {
  const parsed = brokerConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new Error(
    `invalid broker config: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
  );
}
