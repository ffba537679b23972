import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  type Client,
  credentials,
  loadPackageDefinition,
  Metadata,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/**
 * Raw `apache.rocketmq.v2.MessagingService` calls, for the protocol cases of the RocketMQ broker's
 * own gRPC integration tests (GrpcBaseIT). The schema is the one shipped inside Apache's
 * `rocketmq-client-nodejs` package, not Ricochet's copy, so a mistake in Ricochet's cannot hide
 * itself here.
 */
const require = createRequire(import.meta.url);
const upstreamProtoDir = join(dirname(require.resolve('rocketmq-client-nodejs/package.json')), 'proto');

const definition = loadSync('apache/rocketmq/v2/service.proto', {
  includeDirs: [upstreamProtoDir],
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
});
const MessagingService = (
  loadPackageDefinition(definition) as unknown as {
    apache: { rocketmq: { v2: { MessagingService: ServiceClientConstructor } } };
  }
).apache.rocketmq.v2.MessagingService;

// Loosely typed on purpose: each test writes the request as the wire carries it.
// biome-ignore lint/suspicious/noExplicitAny: protocol-level requests and answers of any shape
type Wire = any;

export interface RawRocketClient extends Disposable {
  readonly clientId: string;
  unary(method: string, request: Wire): Promise<Wire>;
  /** Every frame of a server stream, until it ends. */
  stream(method: string, request: Wire): Promise<Wire[]>;
  /** A Telemetry stream: the first answer to `settings`, and the stream to end or cancel. */
  telemetry(
    settings: Wire,
  ): Promise<{ readonly answer: Wire; readonly cancel: () => void; readonly end: () => void }>;
}

/** A raw client of `host:port` speaking as client `clientId` (`x-mq-client-id`). */
export function rawRocketClient(
  endpoints: string,
  clientId: string,
  options: {
    readonly maxMessageBytes?: number;
    readonly metadata?: Record<string, string>;
    /** Connect over TLS, trusting this CA certificate (PEM). */
    readonly ca?: string;
  } = {},
): RawRocketClient {
  // Each raw client its own connection, as separate processes would have (grpc-js would share one).
  const channelOptions = {
    'grpc.use_local_subchannel_pool': 1,
    ...(options.maxMessageBytes === undefined
      ? {}
      : {
          'grpc.max_receive_message_length': options.maxMessageBytes,
          'grpc.max_send_message_length': options.maxMessageBytes,
        }),
  };
  const channel =
    options.ca === undefined ? credentials.createInsecure() : credentials.createSsl(Buffer.from(options.ca));
  const client: Client & Record<string, Wire> = new MessagingService(
    endpoints,
    channel,
    channelOptions,
  ) as Client & Record<string, Wire>;
  const metadata = () => {
    const headers = new Metadata();
    headers.set('x-mq-client-id', clientId);
    headers.set('x-mq-protocol', 'v2');
    for (const [key, value] of Object.entries(options.metadata ?? {})) headers.set(key, value);
    return headers;
  };
  const deadline = () => Date.now() + 30_000;
  return {
    clientId,
    unary(method, request) {
      return new Promise((resolve, reject) => {
        client[method](request, metadata(), { deadline: deadline() }, (error: Error | null, answer: Wire) =>
          error ? reject(error) : resolve(answer),
        );
      });
    },
    stream(method, request) {
      return new Promise((resolve, reject) => {
        const frames: Wire[] = [];
        const call = client[method](request, metadata(), { deadline: deadline() });
        call.on('data', (frame: Wire) => frames.push(frame));
        call.on('error', reject);
        call.on('end', () => resolve(frames));
      });
    },
    telemetry(settings) {
      return new Promise((resolve, reject) => {
        const call = client.Telemetry(metadata());
        call.once('data', (answer: Wire) =>
          resolve({ answer, cancel: () => call.cancel(), end: () => call.end() }),
        );
        call.once('error', reject);
        call.write({ settings });
      });
    },
    [Symbol.dispose]() {
      client.close();
    },
  };
}

/** `google.protobuf.Duration` of `ms`. */
export function duration(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1_000), nanos: (ms % 1_000) * 1_000_000 };
}

/** Milliseconds of a `google.protobuf.Duration` or `Timestamp`. */
export function millis(value: { seconds?: number; nanos?: number } | undefined): number {
  return (value?.seconds ?? 0) * 1_000 + Math.floor((value?.nanos ?? 0) / 1_000_000);
}

let nextId = 0;
/** A message id as the official clients make them: unique, upper-case hex. */
export function rocketMessageId(): string {
  nextId++;
  return `01${process.pid.toString(16).padStart(8, '0')}${Date.now().toString(16)}${nextId.toString(16).padStart(8, '0')}`.toUpperCase();
}

/** One message for `SendMessage`, with what the official clients always set. */
export function rocketMessage(topic: string, body: Buffer, system: Record<string, unknown> = {}): Wire {
  return {
    topic: { name: topic, resourceNamespace: '' },
    body,
    systemProperties: {
      messageId: rocketMessageId(),
      bornTimestamp: duration(Date.now()),
      bornHost: 'test',
      bodyEncoding: 'IDENTITY',
      messageType: 'NORMAL',
      queueId: 0,
      ...system,
    },
  };
}

/** A `ReceiveMessage` request of a simple consumer (explicit invisible duration, no auto-renew). */
export function simpleReceive(
  group: string,
  topic: string,
  invisibleMs: number,
  pollMs = 0,
  batchSize = 32,
): Wire {
  return {
    group: { name: group },
    messageQueue: { topic: { name: topic }, id: 0 },
    filterExpression: { type: 'TAG', expression: '*' },
    batchSize,
    invisibleDuration: duration(invisibleMs),
    autoRenew: false,
    longPollingTimeout: duration(pollMs),
  };
}

/** The messages of a `ReceiveMessage` answer, and its first status. */
export function receivedOf(frames: readonly Wire[]): { status: string; messages: Wire[] } {
  return {
    status: frames.find((frame) => frame.status)?.status.code ?? 'none',
    messages: frames.filter((frame) => frame.message).map((frame) => frame.message),
  };
}
