import { fileURLToPath } from 'node:url';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import type { GrpcMethodCodec } from './grpc-server.js';

/** A gRPC service's methods by name, each with its path, shape and codec. */
export type ServiceCodecs = Readonly<Record<string, GrpcMethodCodec>>;

/**
 * The RocketMQ 5 wire schema (`proto/rocketmq-v2.proto`, beside `src/` and `dist/` alike, so the
 * same relative path holds from source and from the build), and the shapes of its decoded
 * messages as the handlers read and write them.
 *
 * Decoding options, chosen once: camelCase field names; `int64` as a JavaScript number (offsets
 * and timestamps stay far below 2^53); enums as their names, so a handler writes `'OK'` rather
 * than a number; absent fields stay `undefined` (no defaults), so "not sent" is visible; and a
 * virtual field per `oneof` naming the member that is set.
 */
export const ROCKETMQ_PROTO_PATH = fileURLToPath(
  new URL('../../../proto/rocketmq-v2.proto', import.meta.url),
);

/** The whole schema as proto-loader reads it, with the decoding options above. */
export function loadRocketSchema(): PackageDefinition {
  return loadSync(ROCKETMQ_PROTO_PATH, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: false,
    oneofs: true,
  });
}

/**
 * The service every official RocketMQ 5 client calls: `apache.rocketmq.v2.MessagingService`, every
 * method (de)serialized by proto-loader's generic codec (rocketmq-codecs.ts swaps in its own for
 * the hot ones).
 */
export function messagingServiceDefinition(definitions = loadRocketSchema()): ServiceCodecs {
  const service = definitions['apache.rocketmq.v2.MessagingService'];
  if (service === undefined || !isServiceDefinition(service)) {
    throw new Error(`${ROCKETMQ_PROTO_PATH} defines no apache.rocketmq.v2.MessagingService`);
  }
  return service;
}

/** The values of enum `name` (`apache.rocketmq.v2.Code`, …) of a loaded schema, name by number. */
export function enumValuesOf(
  definitions: PackageDefinition,
  name: string,
): readonly { readonly name: string; readonly number: number }[] {
  const definition = definitions[name] as
    | { type?: { value?: { name: string; number: number }[] } }
    | undefined;
  const values = definition?.type?.value;
  if (values === undefined) throw new Error(`${ROCKETMQ_PROTO_PATH} defines no enum ${name}`);
  return values;
}

function isServiceDefinition(value: object): value is ServiceCodecs {
  return Object.values(value).every((method) => typeof method === 'object' && 'path' in method);
}

/** The status codes of `apache.rocketmq.v2.Code` Ricochet answers with. */
export type RocketCode =
  | 'OK'
  | 'MULTIPLE_RESULTS'
  | 'BAD_REQUEST'
  | 'ILLEGAL_TOPIC'
  | 'ILLEGAL_CONSUMER_GROUP'
  | 'ILLEGAL_MESSAGE_ID'
  | 'ILLEGAL_FILTER_EXPRESSION'
  | 'ILLEGAL_INVISIBLE_TIME'
  | 'ILLEGAL_DELIVERY_TIME'
  | 'INVALID_RECEIPT_HANDLE'
  | 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE'
  | 'CLIENT_ID_REQUIRED'
  | 'ILLEGAL_POLLING_TIME'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'MESSAGE_NOT_FOUND'
  | 'TOPIC_NOT_FOUND'
  | 'CONSUMER_GROUP_NOT_FOUND'
  | 'REQUEST_TIMEOUT'
  | 'MESSAGE_BODY_TOO_LARGE'
  | 'MESSAGE_PROPERTIES_TOO_LARGE'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL_ERROR'
  | 'HA_NOT_AVAILABLE'
  | 'UNSUPPORTED';

export interface RocketStatus {
  readonly code: RocketCode;
  readonly message: string;
}

export interface Resource {
  readonly resourceNamespace?: string;
  readonly name?: string;
}

/** `google.protobuf.Duration`. */
export interface Duration {
  readonly seconds?: number;
  readonly nanos?: number;
}

/** `google.protobuf.Timestamp`. */
export type Timestamp = Duration;

export interface Address {
  readonly host?: string;
  readonly port?: number;
}

export interface Endpoints {
  readonly scheme?: 'ADDRESS_SCHEME_UNSPECIFIED' | 'IPv4' | 'IPv6' | 'DOMAIN_NAME';
  readonly addresses?: readonly Address[];
}

export type MessageType = 'MESSAGE_TYPE_UNSPECIFIED' | 'NORMAL' | 'FIFO' | 'DELAY' | 'TRANSACTION';

export type ClientType =
  | 'CLIENT_TYPE_UNSPECIFIED'
  | 'PRODUCER'
  | 'PUSH_CONSUMER'
  | 'SIMPLE_CONSUMER'
  | 'PULL_CONSUMER';

export interface MessageQueue {
  readonly topic?: Resource;
  readonly id?: number;
  readonly permission?: 'READ_WRITE';
  readonly broker?: { readonly name: string; readonly id: number; readonly endpoints: Endpoints };
  readonly acceptMessageTypes?: readonly MessageType[];
}

export interface FilterExpression {
  readonly type?: 'FILTER_TYPE_UNSPECIFIED' | 'TAG' | 'SQL';
  readonly expression?: string;
}

export interface SystemProperties {
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageId?: string;
  readonly bodyDigest?: { readonly type: 'MD5'; readonly checksum: string };
  readonly bodyEncoding?: 'ENCODING_UNSPECIFIED' | 'IDENTITY' | 'GZIP';
  readonly messageType?: MessageType;
  readonly bornTimestamp?: Timestamp;
  readonly bornHost?: string;
  readonly storeTimestamp?: Timestamp;
  readonly storeHost?: string;
  readonly deliveryTimestamp?: Timestamp;
  readonly receiptHandle?: string;
  readonly queueId?: number;
  readonly queueOffset?: number;
  readonly invisibleDuration?: Duration;
  readonly deliveryAttempt?: number;
  readonly messageGroup?: string;
  readonly deadLetterQueue?: { readonly topic: string; readonly messageId: string };
}

export interface RocketMessage {
  readonly topic?: Resource;
  readonly userProperties?: Readonly<Record<string, string>>;
  readonly systemProperties?: SystemProperties;
  readonly body?: Uint8Array;
}

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly exponentialBackoff?: {
    readonly initial: Duration;
    readonly max: Duration;
    readonly multiplier: number;
  };
  readonly customizedBackoff?: { readonly next: readonly Duration[] };
}

export interface SubscriptionEntry {
  readonly topic?: Resource;
  readonly expression?: FilterExpression;
}

export interface Settings {
  readonly clientType?: ClientType;
  readonly accessPoint?: Endpoints;
  readonly backoffPolicy?: RetryPolicy;
  readonly requestTimeout?: Duration;
  readonly publishing?: {
    readonly topics?: readonly Resource[];
    readonly maxBodySize?: number;
    readonly validateMessageType?: boolean;
  };
  readonly subscription?: {
    readonly group?: Resource;
    readonly subscriptions?: readonly SubscriptionEntry[];
    readonly fifo?: boolean;
    readonly receiveBatchSize?: number;
    readonly longPollingTimeout?: Duration;
  };
  readonly userAgent?: { readonly language?: string; readonly version?: string };
  /** Which of `publishing` and `subscription` is set (the `pub_sub` oneof). */
  readonly pubSub?: 'publishing' | 'subscription';
}

export interface TelemetryCommand {
  readonly status?: RocketStatus;
  readonly settings?: Settings;
  /** Which command is set (the `command` oneof). */
  readonly command?: 'settings' | 'threadStackTrace' | 'verifyMessageResult';
}

export interface QueryRouteRequest {
  readonly topic?: Resource;
  readonly endpoints?: Endpoints;
}

export interface QueryAssignmentRequest {
  readonly topic?: Resource;
  readonly group?: Resource;
  readonly endpoints?: Endpoints;
}

export interface HeartbeatRequest {
  readonly group?: Resource;
  readonly clientType?: ClientType;
}

export interface NotifyClientTerminationRequest {
  readonly group?: Resource;
}

export interface SendMessageRequest {
  readonly messages?: readonly RocketMessage[];
}

export interface SendResultEntry {
  readonly status: RocketStatus;
  readonly messageId: string;
  readonly transactionId: string;
  readonly offset: number;
}

export interface ReceiveMessageRequest {
  readonly group?: Resource;
  readonly messageQueue?: MessageQueue;
  readonly filterExpression?: FilterExpression;
  readonly batchSize?: number;
  readonly invisibleDuration?: Duration;
  readonly autoRenew?: boolean;
  readonly longPollingTimeout?: Duration;
  readonly attemptId?: string;
}

export type ReceiveMessageResponse =
  | { readonly status: RocketStatus }
  | { readonly message: RocketMessage }
  | { readonly deliveryTimestamp: Timestamp };

export interface AckMessageRequest {
  readonly group?: Resource;
  readonly topic?: Resource;
  readonly entries?: readonly { readonly messageId?: string; readonly receiptHandle?: string }[];
}

export interface AckMessageResultEntry {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly status: RocketStatus;
}

export interface ChangeInvisibleDurationRequest {
  readonly group?: Resource;
  readonly topic?: Resource;
  readonly receiptHandle?: string;
  readonly invisibleDuration?: Duration;
  readonly messageId?: string;
}

export interface ForwardMessageToDeadLetterQueueRequest {
  readonly group?: Resource;
  readonly topic?: Resource;
  readonly receiptHandle?: string;
  readonly messageId?: string;
  readonly deliveryAttempt?: number;
  readonly maxDeliveryAttempts?: number;
}

/** Milliseconds of a `Duration` or `Timestamp`; `undefined` when it was not sent. */
export function millisOf(value: Duration | undefined): number | undefined {
  if (value === undefined) return undefined;
  return (value.seconds ?? 0) * 1_000 + Math.floor((value.nanos ?? 0) / 1_000_000);
}

/** A `Duration` or `Timestamp` of `ms` milliseconds. */
export function durationOf(ms: number): Duration {
  return { seconds: Math.floor(ms / 1_000), nanos: (ms % 1_000) * 1_000_000 };
}
