import type { GroupConfig, RetryPolicy as RicochetRetryPolicy } from '@ricochet/core';
import { durationOf, millisOf, type RetryPolicy, type Settings } from './rocketmq-schema.js';

/**
 * The largest body Ricochet tells a RocketMQ client it may send: the broker's limit, but below
 * grpc-js's default 4 MiB cap on a message a *client* receives (a consumer could not read a
 * larger one), less room for the message's other fields.
 */
const CLIENT_RECEIVE_CAP_BYTES = 4 * 1024 * 1024 - 64 * 1024;

/** How many messages a push consumer asks for per receive; RocketMQ's proxy default. */
export const RECEIVE_BATCH_SIZE = 32;

/**
 * What the broker answers a client's settings with on the Telemetry stream. Every official
 * client blocks its start until this answer comes (Node and Python with no timeout), so it is
 * always sent. A producer is told R2's send backoff (exponential; the Node client asserts that
 * shape) and the body limit; a consumer is told its group's real policy: max attempts
 * `maxRetries + 1`, the retry delays, FIFO, the batch size and the long-polling time.
 */
export function settingsAnswer(
  client: Settings,
  server: {
    readonly maxBodyBytes: number;
    readonly group?: GroupConfig | undefined;
    readonly longPollingTimeoutMs: number;
  },
): Settings {
  const base = {
    ...(client.clientType === undefined ? {} : { clientType: client.clientType }),
    ...(client.accessPoint === undefined ? {} : { accessPoint: client.accessPoint }),
    ...(client.requestTimeout === undefined ? {} : { requestTimeout: client.requestTimeout }),
    ...(client.userAgent === undefined ? {} : { userAgent: client.userAgent }),
  };
  if (client.subscription !== undefined && server.group !== undefined) {
    const group = server.group;
    return {
      ...base,
      backoffPolicy: consumerBackoffOf(group),
      subscription: {
        ...client.subscription,
        fifo: group.fifo,
        receiveBatchSize: RECEIVE_BATCH_SIZE,
        // The client's own choice stands up to the broker's longest poll (a push consumer's
        // shutdown waits for its polls to end, so a team may well want them short).
        longPollingTimeout: durationOf(
          Math.min(
            millisOf(client.subscription.longPollingTimeout) ?? server.longPollingTimeoutMs,
            server.longPollingTimeoutMs,
          ),
        ),
      },
    };
  }
  return {
    ...base,
    backoffPolicy: {
      // The client's own attempt count stands (R2's maxAttempts is the producer's choice).
      maxAttempts: client.backoffPolicy?.maxAttempts ?? 3,
      // R2's throttling backoff: INITIAL 1 s, MULTIPLIER 1.6, MAX 120 s.
      exponentialBackoff: { initial: durationOf(1_000), max: durationOf(120_000), multiplier: 1.6 },
    },
    publishing: {
      topics: client.publishing?.topics ?? [],
      maxBodySize: Math.min(server.maxBodyBytes, CLIENT_RECEIVE_CAP_BYTES),
      validateMessageType: client.publishing?.validateMessageType ?? true,
    },
  };
}

/** A group's retry policy as RocketMQ's: max attempts = maxRetries + 1 (P4), and its delays. */
export function consumerBackoffOf(group: GroupConfig): RetryPolicy {
  return { maxAttempts: group.maxRetries + 1, ...strategyOf(group.retryPolicy) };
}

function strategyOf(policy: RicochetRetryPolicy): Omit<RetryPolicy, 'maxAttempts'> {
  switch (policy.type) {
    case 'stepped':
      return { customizedBackoff: { next: policy.delaysMs.map(durationOf) } };
    case 'fixed':
      return { customizedBackoff: { next: [durationOf(policy.delayMs)] } };
    case 'exponential':
      return {
        exponentialBackoff: {
          initial: durationOf(policy.initialMs),
          max: durationOf(policy.maxMs),
          multiplier: policy.multiplier,
        },
      };
  }
}
