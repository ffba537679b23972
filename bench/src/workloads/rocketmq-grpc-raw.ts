import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { grpcFrame, RawGrpcClient } from '../grpc-load/grpc-raw-client.js';
import { measuredSends, type RicochetRunOptions, type Throughput } from '../measured-window.js';
import { startGrpcBroker } from './rocketmq-grpc.js';
import { measuredReceives, prepublishW2s } from './w2s-simple-consume.js';

/**
 * W1 and W2s through Ricochet's RocketMQ 5 endpoint with a load generator rather than Apache's
 * client: HTTP/2 framed by hand ({@link RawGrpcClient}) on a few connections, many streams each,
 * with the requests encoded once. The official Node client spends more CPU per message than the
 * broker, so its rows show the client's limit; these show the broker's. The calls are the ones the
 * official clients make, one message per `SendMessage` and one entry per `AckMessage`, with the
 * same headers, so the broker does the same work per message.
 */
/**
 * One HTTP/2 connection, as each official client opens to an endpoint (a gRPC channel), and as
 * the own protocol's rows use one session: the ratio of broker CPU per message then compares the
 * same client shape. The broker writes each connection's answers of a turn in one socket write,
 * so four connections cost four writes (and four wake-ups of the client) where one costs one:
 * with four, W2s cost the broker 5–8 µs more per message, which the own protocol's row never
 * paid. Four were needed while `node:http2`'s client framed the calls; this one does not need them
 * (its rate is higher on one).
 */
export const GRPC_RAW_SESSIONS = 1;
/**
 * Messages per row: half of W1's and W2s's 100,000, so a row stays short on a busy machine while
 * its broker CPU (counted in 10 ms ticks) still reads to a fraction of a percent.
 */
export const GRPC_RAW_MESSAGES = 50_000;
const IN_FLIGHT = 1_000;
const WARM_UP = 5_000;
const BODY = randomBytes(256);
/** RocketMQ's `Code.OK`, and `MESSAGE_NOT_FOUND` (an empty receive). */
const OK = 20_000;
const MESSAGE_NOT_FOUND = 40_401;

/**
 * The schema as Apache's Node client ships it (not the broker's copy), so a mistake in the
 * broker's codecs cannot be cancelled by the same mistake here.
 */
const require = createRequire(import.meta.url);
const protoDir = join(dirname(require.resolve('rocketmq-client-nodejs/package.json')), 'proto');
const root = new protobuf.Root();
// Imports resolve in the client's proto directory; google/protobuf/* are protobufjs's own.
root.resolvePath = (_origin, target) =>
  existsSync(join(protoDir, target)) ? join(protoDir, target) : target;
root.loadSync('apache/rocketmq/v2/service.proto', { keepCase: true });
const SendMessageRequest = root.lookupType('apache.rocketmq.v2.SendMessageRequest');
const SendMessageResponse = root.lookupType('apache.rocketmq.v2.SendMessageResponse');
const ReceiveMessageRequest = root.lookupType('apache.rocketmq.v2.ReceiveMessageRequest');
const ReceiveMessageResponse = root.lookupType('apache.rocketmq.v2.ReceiveMessageResponse');
const AckMessageRequest = root.lookupType('apache.rocketmq.v2.AckMessageRequest');
const AckMessageEntry = root.lookupType('apache.rocketmq.v2.AckMessageEntry');
const AckMessageResponse = root.lookupType('apache.rocketmq.v2.AckMessageResponse');

interface Status {
  readonly code: number;
  readonly message: string;
}

function encode(type: protobuf.Type, value: object): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}

/** The status of a decoded response; a missing one reads as OK, as the official clients read it. */
function checkOk(method: string, status: Status | null | undefined): void {
  if (status != null && status.code !== OK) {
    throw new Error(`${method} answered ${status.code}: ${status.message}`);
  }
}

/**
 * `SendMessage` requests of one message each, encoded once: every request is a copy of one framed
 * template with a fresh `message_id` written over the placeholder's bytes (ids must differ, or R3's
 * dedup would answer without storing).
 */
class SendTemplate {
  static readonly #ID_LENGTH = 32;
  readonly #frame: Buffer;
  readonly #idAt: number;
  readonly #prefix = randomBytes(8).toString('hex');
  #sent = 0;

  constructor(topic: string) {
    const placeholder = 'X'.repeat(SendTemplate.#ID_LENGTH);
    const nowMs = Date.now();
    this.#frame = grpcFrame(
      encode(SendMessageRequest, {
        messages: [
          {
            topic: { resource_namespace: '', name: topic },
            system_properties: {
              message_id: placeholder,
              born_timestamp: { seconds: Math.floor(nowMs / 1_000), nanos: (nowMs % 1_000) * 1e6 },
              born_host: 'bench',
              body_encoding: 'IDENTITY',
              queue_id: 0,
              message_type: 'NORMAL',
            },
            body: BODY,
          },
        ],
      }),
    );
    this.#idAt = this.#frame.indexOf(placeholder, 0, 'latin1');
    if (this.#idAt < 0 || this.#frame.indexOf(placeholder, this.#idAt + 1, 'latin1') >= 0) {
      throw new Error('the message id placeholder is not in the template exactly once');
    }
  }

  next(): Buffer {
    const frame = Buffer.from(this.#frame);
    const counter = (this.#sent++).toString(16).padStart(SendTemplate.#ID_LENGTH / 2, '0');
    frame.write(this.#prefix + counter, this.#idAt, 'latin1');
    return frame;
  }
}

/** W1 through the load generator: up to 1,000 `SendMessage` calls in flight, each awaited. */
export async function rawGrpcW1(options: RicochetRunOptions = {}): Promise<Throughput> {
  await using broker = await startGrpcBroker(options);
  await using client = await RawGrpcClient.connect(broker.grpcEndpoint, GRPC_RAW_SESSIONS, 'bench-w1');
  const sends = new SendTemplate('w1');
  const send = async () => {
    const [answer] = await client.call('SendMessage', sends.next());
    const response = SendMessageResponse.decode(answer ?? Buffer.alloc(0)) as unknown as {
      status?: Status;
      entries: { status?: Status }[];
    };
    checkOk('SendMessage', response.status);
    for (const entry of response.entries) checkOk('SendMessage', entry.status);
  };
  const result = await measuredSends(
    broker,
    options,
    { warmUp: WARM_UP, messages: GRPC_RAW_MESSAGES, inFlight: IN_FLIGHT },
    send,
  );
  if (client.refusals > 0) console.error(`  w1 via gRPC: ${client.refusals} streams refused and sent again`);
  return result;
}

interface Delivered {
  readonly messageId: string;
  readonly receiptHandle: string;
}

/**
 * W2s through the load generator: W2s's pattern ({@link receiveAndAck}) with one
 * `ReceiveMessage` request encoded once, and each ack one `AckMessage` of one entry (as every
 * official client acks) whose group and topic are encoded once, the entry spliced after them.
 */
export async function rawGrpcW2s(options: RicochetRunOptions = {}): Promise<Throughput> {
  await using broker = await startGrpcBroker(options);
  await prepublishW2s(broker.endpoint, GRPC_RAW_MESSAGES);
  await using client = await RawGrpcClient.connect(broker.grpcEndpoint, GRPC_RAW_SESSIONS, 'bench-w2s');
  const receiveFrame = grpcFrame(
    encode(ReceiveMessageRequest, {
      group: { name: 'w2s' },
      message_queue: { topic: { name: 'w2s' }, id: 0, permission: 'READ_WRITE' },
      filter_expression: { type: 'TAG', expression: '*' },
      batch_size: 32,
      invisible_duration: { seconds: 60 },
      auto_renew: false,
      long_polling_timeout: { seconds: 0 },
    }),
  );
  const ackPrefix = Buffer.from(
    encode(AckMessageRequest, { group: { name: 'w2s' }, topic: { name: 'w2s' } }),
  );
  /** `entries` is field 3, length-delimited: tag (3 << 3) | 2. */
  const ENTRIES_TAG = Buffer.from([(3 << 3) | 2]);
  const receive = async (): Promise<Delivered[]> => {
    const frames = await client.call('ReceiveMessage', receiveFrame);
    const delivered: Delivered[] = [];
    for (const frame of frames) {
      const response = ReceiveMessageResponse.decode(frame) as unknown as {
        status?: Status;
        message?: { system_properties?: { message_id: string; receipt_handle: string } };
      };
      if (response.status != null && response.status.code !== MESSAGE_NOT_FOUND) {
        checkOk('ReceiveMessage', response.status);
      }
      const system = response.message?.system_properties;
      if (system) delivered.push({ messageId: system.message_id, receiptHandle: system.receipt_handle });
    }
    return delivered;
  };
  const ack = async ({ messageId, receiptHandle }: Delivered) => {
    const entry = AckMessageEntry.encodeDelimited(
      AckMessageEntry.create({ message_id: messageId, receipt_handle: receiptHandle }),
    ).finish();
    const [answer] = await client.call(
      'AckMessage',
      grpcFrame(Buffer.concat([ackPrefix, ENTRIES_TAG, entry])),
    );
    const response = AckMessageResponse.decode(answer ?? Buffer.alloc(0)) as unknown as {
      status?: Status;
      entries: { status?: Status }[];
    };
    checkOk('AckMessage', response.status);
    for (const result of response.entries) checkOk('AckMessage', result.status);
  };
  const result = await measuredReceives(broker, options, GRPC_RAW_MESSAGES, receive, ack);
  if (client.refusals > 0) console.error(`  w2s via gRPC: ${client.refusals} streams refused and sent again`);
  return result;
}
