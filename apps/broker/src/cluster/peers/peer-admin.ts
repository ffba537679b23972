import { ADMIN_CALLS_FEATURE, type AdminCallName, BrokerError } from '@ricochet/protocol';
import type { AdminCallAnswer, AdminCallArgs, QueueAdminCall } from '../../engine/index.js';
import type { PeerConnection } from './peer-connection.js';

/**
 * How long one admin call may wait for the owner's answer: an operator's request is answered
 * `408` well within an admin client's own timeout (the CLI's 10 s) rather than at a client's 30 s.
 */
export const ADMIN_CALL_TIMEOUT_MS = 10_000;

/**
 * The admin calls of a queue another broker owns (DESIGN.md §9), made on the session between
 * brokers that carries the queue's messaging (`adminCall`, granted with the `adminCalls` feature):
 * each answers what the same-named call of the owner's engine of the queue answers
 * (`QUEUE_ADMIN_CALLS`), its errors the owner's `BrokerError`s, and `503 BROKER_UNAVAILABLE` once
 * the session is gone, as its messaging is. One socket per queue and owner for everything, so an
 * idle cluster's watermark checks and an operator's listings cost a frame each, not an HTTP request.
 */
export function peerAdminCalls(connection: PeerConnection): QueueAdminCall {
  return async <K extends AdminCallName>(call: K, ...args: AdminCallArgs<K>): Promise<AdminCallAnswer<K>> => {
    const answer = await connection.request(
      // `nil` for an argument not given: MessagePack has no `undefined` (`answerAdminCall`).
      { type: 'adminCall', call, args: args.map((arg) => (arg === undefined ? null : arg)) },
      undefined,
      ADMIN_CALL_TIMEOUT_MS,
    );
    if (answer.type !== 'adminAnswer')
      throw BrokerError.of('INTERNAL_ERROR', `the queue's owner answered ${call} with ${answer.type}`);
    return plainBytes(answer.value) as AdminCallAnswer<K>;
  };
}

/**
 * The admin calls of a queue whose owner is reached on `connection`: on that session when the
 * owner grants `adminCalls` ({@link peerAdminCalls}), else `olderRelease()`'s. An owner of a
 * release before the feature, during a rolling upgrade, answers them over its admin HTTP API only
 * (`remote-admin.ts`).
 */
export function queueAdminOf(connection: PeerConnection, olderRelease: () => QueueAdminCall): QueueAdminCall {
  return connection.granted(ADMIN_CALLS_FEATURE) ? peerAdminCalls(connection) : olderRelease();
}

/**
 * `value` with every byte string (a message's body: msgpackr decodes one as a `Buffer` over the
 * frame) as a plain `Uint8Array` over the same bytes, as an engine's answers and decoded
 * deliveries have them. Answers are small trees of views (a DLQ page at most), walked once.
 */
function plainBytes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Uint8Array)
    return value.constructor === Uint8Array
      ? value
      : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (Array.isArray(value)) return value.map(plainBytes);
  const plain: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) plain[key] = plainBytes(field);
  return plain;
}
