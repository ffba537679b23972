import { MAX_INVISIBLE_DURATION_MS, MAX_RETRY_DELAY_MS, MIN_INVISIBLE_DURATION_MS } from '@ricochet/core';
import { z } from 'zod';
import { ADMIN_CALL_NAMES } from '../admin-calls.js';
import {
  MAX_AWAIT_DURATION_MS,
  MAX_RECEIVE_MESSAGES,
  MAX_SEND_BATCH_MESSAGES,
  MAX_STORE_QUEUES,
} from '../limits.js';
import { deliveredMessageSchema, outgoingMessageSchema } from './message.js';
import {
  durationMsSchema,
  errorPayloadSchema,
  groupNameSchema,
  messageIdSchema,
  receiptHandleSchema,
  requestIdSchema,
  subscriptionsSchema,
} from './primitives.js';

const receiptHandlesSchema = z.array(receiptHandleSchema).min(1).max(1_024);

/** The name of an optional feature negotiated in `hello` and `welcome`. */
const featureNameSchema = z.string().min(1).max(64);

/** A broker's id in a `queueMap`: its id in the cluster's registry. */
const brokerIdSchema = z.string().min(1).max(1_024);

// ─── Client → broker ─────────────────────────────────────────────────────────────────────────

/** The first frame on every connection: the client's protocol version and, optionally, its token. */
export const helloFrameSchema = z.object({
  type: z.literal('hello'),
  protocolVersion: z.number().int().min(1),
  token: z.string().min(1).max(4_096).exactOptional(),
  /** A name for this client in delivery histories and logs. */
  clientId: z.string().min(1).max(128).exactOptional(),
  /**
   * Between brokers only: this session is another broker's, scoped to one queue of a store split
   * into queues (its `token` is the cluster's peer token). Its requests reach that queue alone,
   * with the queue's own receipt handles and offsets, and may carry `onBehalfOf`.
   */
  queue: z
    .number()
    .int()
    .min(0)
    .max(MAX_STORE_QUEUES - 1)
    .exactOptional(),
  /**
   * The largest frame this client reads: the broker keeps every frame it sends below it (several
   * frames of deliveries, fewer messages in an answer), but for one message larger on its own.
   * A broker that does not know the field ignores it. @default 64 MiB (DEFAULT_PEER_MAX_FRAME_BYTES)
   */
  maxFrameBytes: z.number().int().min(1).exactOptional(),
  /**
   * Optional features the client speaks (`queueMap`: it routes each message to its queue's owner
   * when told the queue map). A broker grants those it also speaks in `welcome.features` and
   * ignores the others; a broker that predates the field ignores it, and the client goes on as
   * before. @see docs/protocol/README.md#versioning
   */
  features: z.array(featureNameSchema).max(16).exactOptional(),
});

/**
 * Between brokers only (a session with `hello.queue`): the client a forwarding broker acts for, so
 * that the owner of the queue records and treats the request as that client's. Refused on any
 * other session.
 */
export const onBehalfOfSchema = z.object({
  /** The client's name in delivery histories: its `hello.clientId`, or its session's name. */
  consumerId: z.string().min(1).max(128).exactOptional(),
  /** The `clientId` the client named itself with in `hello`, if it did: a broadcast instance's identity (B1). */
  clientId: z.string().min(1).max(128).exactOptional(),
  /** The principal the forwarding broker authenticated: who settles, in delivery histories. */
  principal: z.string().min(1).max(128).exactOptional(),
});

/** Store a batch of messages (R1). Answered by `sendResult`. */
export const sendFrameSchema = z.object({
  type: z.literal('send'),
  id: requestIdSchema,
  messages: z.array(outgoingMessageSchema).min(1).max(MAX_SEND_BATCH_MESSAGES),
});

/**
 * Register a simple consumer's subscriptions for a group: a new group's position in each topic is
 * taken now (`startFrom`), so a message sent after the answer is received. Answered by `ok`.
 */
export const registerFrameSchema = z.object({
  type: z.literal('register'),
  id: requestIdSchema,
  group: groupNameSchema,
  subscriptions: subscriptionsSchema,
});

/** Start a push subscription for a group. Answered by `subscribed`. */
export const subscribeFrameSchema = z.object({
  type: z.literal('subscribe'),
  id: requestIdSchema,
  group: groupNameSchema,
  subscriptions: subscriptionsSchema,
  /** The initial credit: how many unsettled deliveries the client can hold (0: none until it grants some). */
  maxCachedMessages: z.number().int().min(0).max(65_536),
  /**
   * The most bytes of unsettled deliveries (as `deliveredMessageBytes` estimates them) the client
   * holds: the broker delivers no more while that many are out, but for one message larger on its
   * own. A broker that does not know the field ignores it. @default no limit but the count
   */
  maxCachedBytes: z.number().int().min(1).exactOptional(),
  /**
   * `owned`: deliver only from the queues the session's broker owns, now and as queues move to and
   * from it, never forwarding from another broker. Sent only on a session granted the
   * `ownedSubscriptions` feature; refused (`400`) on any other. @default every queue (forwarded
   * from their owners)
   */
  scope: z.literal('owned').exactOptional(),
  onBehalfOf: onBehalfOfSchema.exactOptional(),
});

/** Stop a push subscription; its inflight deliveries stay leased until settled. Answered by `ok`. */
export const unsubscribeFrameSchema = z.object({
  type: z.literal('unsubscribe'),
  id: requestIdSchema,
  subscriptionId: z.number().int().min(0),
  /** Also release every delivery the subscription holds now, as the end of its session would (C2). */
  release: z.literal(true).exactOptional(),
});

/** Grant a push subscription more deliveries (flow control). No answer. */
export const creditFrameSchema = z.object({
  type: z.literal('credit'),
  subscriptionId: z.number().int().min(0),
  credits: z.number().int().min(1).max(65_536),
});

/** Commit deliveries. Answered by `settled`. */
export const ackFrameSchema = z.object({
  type: z.literal('ack'),
  id: requestIdSchema,
  receiptHandles: receiptHandlesSchema,
  onBehalfOf: onBehalfOfSchema.exactOptional(),
});

/** One delivery a `nack` fails: retried after the group's delay or `retryAfterMs`, or dead-lettered now. */
const nackItemSchema = z
  .object({
    receiptHandle: receiptHandleSchema,
    reason: z.string().max(1_024).exactOptional(),
    retryAfterMs: durationMsSchema(0, MAX_RETRY_DELAY_MS).exactOptional(),
    /** To the group's DLQ at once, whatever attempts remain (D3); push and simple deliveries alike. */
    deadLetter: z.literal(true).exactOptional(),
    /**
     * With `deadLetter`: the listener threw a non-retryable error (X1), recorded as the DLQ entry's
     * cause `nonRetryable` instead of `deadLetterNow` (X6). A broker that predates it ignores it.
     */
    nonRetryable: z.literal(true).exactOptional(),
    /**
     * With `retryAfterMs`: the listener postponed the message (X4), back after `retryAfterMs`
     * without a failure counted. A broker that predates it ignores it and counts a failure
     * retried after `retryAfterMs`, so the message still comes back then.
     */
    postpone: z.literal(true).exactOptional(),
  })
  .refine((item) => !(item.deadLetter && item.retryAfterMs !== undefined), {
    message: 'a dead-lettered item takes no retryAfterMs',
    path: ['retryAfterMs'],
  })
  .refine((item) => !(item.nonRetryable && !item.deadLetter), {
    message: 'nonRetryable goes with deadLetter',
    path: ['nonRetryable'],
  })
  .refine((item) => !(item.postpone && item.retryAfterMs === undefined), {
    message: 'postpone goes with retryAfterMs',
    path: ['postpone'],
  });

/**
 * Report failed deliveries: push ones are retried (`retryAfterMs` overrides the group's delay once);
 * an item with `deadLetter` goes to the DLQ at once, push or simple. Answered by `settled`.
 */
export const nackFrameSchema = z.object({
  type: z.literal('nack'),
  id: requestIdSchema,
  items: z.array(nackItemSchema).min(1).max(1_024),
  onBehalfOf: onBehalfOfSchema.exactOptional(),
});

/** Hand push deliveries back unprocessed; not a failure (C2). Answered by `settled`. */
export const releaseFrameSchema = z.object({
  type: z.literal('release'),
  id: requestIdSchema,
  receiptHandles: receiptHandlesSchema,
  onBehalfOf: onBehalfOfSchema.exactOptional(),
});

/** Lease up to `maxMessages` messages for a simple consumer (S2). Answered by `messages`. */
export const receiveFrameSchema = z.object({
  type: z.literal('receive'),
  id: requestIdSchema,
  group: groupNameSchema,
  subscriptions: subscriptionsSchema,
  maxMessages: z.number().int().min(1).max(MAX_RECEIVE_MESSAGES),
  invisibleDurationMs: durationMsSchema(MIN_INVISIBLE_DURATION_MS, MAX_INVISIBLE_DURATION_MS),
  /** How long an empty receive waits for a message (long polling); 0 answers at once. */
  awaitDurationMs: durationMsSchema(0, MAX_AWAIT_DURATION_MS),
  /**
   * The most bytes of messages the answer may carry (as `deliveredMessageBytes` estimates them),
   * one message always excepted; the broker also keeps the answer below the frame limit of the
   * session's `hello`. Sent by a forwarding broker with what its client's answer has left.
   */
  maxBytes: z.number().int().min(1).exactOptional(),
  /**
   * `owned`: lease only from the queues the session's broker owns now, never forwarding from another
   * broker; a broker that owns none answers at once with none. Sent only on a session granted the
   * `ownedReceives` feature; refused (`400`) on any other. @default every queue (forwarded from
   * their owners)
   */
  scope: z.literal('owned').exactOptional(),
  onBehalfOf: onBehalfOfSchema.exactOptional(),
});

/** Move a live lease's deadline to now + `invisibleDurationMs` (S4). Answered by `invisibilityChanged`. */
export const changeInvisibleDurationFrameSchema = z.object({
  type: z.literal('changeInvisibleDuration'),
  id: requestIdSchema,
  receiptHandle: receiptHandleSchema,
  invisibleDurationMs: durationMsSchema(0, MAX_INVISIBLE_DURATION_MS),
});

/**
 * Between brokers only, with the `adminCalls` feature: one admin call of the session's queue
 * (`admin-calls.ts`), its arguments in order, as the owner's call of that name takes them (an
 * argument left out is `nil`). Answered by `adminAnswer`, or an `error` with the call's own code.
 */
export const adminCallFrameSchema = z.object({
  type: z.literal('adminCall'),
  id: requestIdSchema,
  call: z.enum(ADMIN_CALL_NAMES),
  args: z.array(z.unknown()).max(8),
});

// ─── Broker → client ─────────────────────────────────────────────────────────────────────────

/** The broker's answer to `hello`: the session is open. */
export const welcomeFrameSchema = z.object({
  type: z.literal('welcome'),
  protocolVersion: z.number().int().min(1),
  sessionId: z.string().min(1).max(128),
  /** The broker's body limit, so a producer can refuse an oversize message locally. */
  maxBodyBytes: z.number().int().min(1),
  /** The largest WebSocket message the broker reads; a larger one closes the connection (1009). */
  maxFrameBytes: z.number().int().min(1),
  /**
   * The features of `hello.features` this broker grants on this session; absent when none (a
   * broker that predates the field never sends it).
   */
  features: z.array(featureNameSchema).max(16).exactOptional(),
});

/**
 * The queue map of a broker whose store is split into queues spread over brokers, sent only on a
 * session that was granted the `queueMap` feature: right after `welcome`, and again whenever a
 * queue's route changes. Each frame is the whole map; the last one received is the current one.
 * A client places each message with `placement` over `queues` and sends it to the queue owner's
 * endpoint; a queue without an owner, or an owner without an endpoint for the session's
 * transport, is reached through this session, which forwards it.
 */
export const queueMapFrameSchema = z
  .object({
    type: z.literal('queueMap'),
    /** The placement rule (`fnv1a-group-or-id`); a client that does not know it routes nothing. */
    placement: z.string().min(1).max(64),
    queues: z.number().int().min(2).max(MAX_STORE_QUEUES),
    /** The id of the broker that sent the map: its own queues are reached on this session. */
    broker: brokerIdSchema,
    /** Per queue, the id of the broker this one routes it to now, or `null` while it is between owners. */
    owners: z.array(brokerIdSchema.nullable()).max(MAX_STORE_QUEUES),
    /** Where each owner serves clients on the session's transport (a `ws://`, `wss://`, `tcp://` or `tls://` URL), by id. */
    endpoints: z.record(brokerIdSchema, z.string().min(1).max(2_048)),
  })
  .refine((frame) => frame.owners.length === frame.queues, {
    message: 'owners names every queue once',
    path: ['owners'],
  });

/** One message's outcome in a `sendResult`, in the order of the `send`. */
export const sendReceiptSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    messageId: messageIdSchema,
    offset: z.number().int().min(0),
    /** True when the id was seen inside the dedup window: this is the original receipt (R3). */
    duplicate: z.boolean(),
  }),
  z.object({ ok: z.literal(false), messageId: messageIdSchema, error: errorPayloadSchema }),
]);

/** The answer to `send`: one receipt per message, each stored durably before this frame is sent (R1). */
export const sendResultFrameSchema = z.object({
  type: z.literal('sendResult'),
  id: requestIdSchema,
  receipts: z.array(sendReceiptSchema),
});

/** The answer to `subscribe`. */
export const subscribedFrameSchema = z.object({
  type: z.literal('subscribed'),
  id: requestIdSchema,
  subscriptionId: z.number().int().min(0),
});

/** Push deliveries for a subscription; each uses one credit. */
export const deliverFrameSchema = z.object({
  type: z.literal('deliver'),
  subscriptionId: z.number().int().min(0),
  messages: z.array(deliveredMessageSchema).min(1),
});

/**
 * Between brokers only: a subscription of a peer session (`hello.queue`) has messages Ready but no
 * credit. The forwarding broker lends it credit from its client's (`credit`), if it has some; `ready`
 * is how many it could deliver now (at most 256), `late` whether any is Ready again (a retry, P3).
 */
export const creditWantedFrameSchema = z.object({
  type: z.literal('creditWanted'),
  subscriptionId: z.number().int().min(0),
  ready: z.number().int().min(1).max(256),
  late: z.boolean(),
});

/**
 * Between brokers only: a subscription of a peer session holds credit and has nothing to deliver; it
 * gives the credit back to the forwarding broker, which may lend it to another queue. Sent after every
 * `deliver` that spent the credit it had before.
 */
export const creditReturnedFrameSchema = z.object({
  type: z.literal('creditReturned'),
  subscriptionId: z.number().int().min(0),
  credits: z.number().int().min(1),
});

/** The answer to `ack`, `nack` and `release`: the handles that failed, by index; empty when all settled. */
export const settledFrameSchema = z.object({
  type: z.literal('settled'),
  id: requestIdSchema,
  failures: z.array(z.object({ index: z.number().int().min(0), ...errorPayloadSchema.shape })),
});

/** The answer to `receive`: the leased messages, possibly none. */
export const messagesFrameSchema = z.object({
  type: z.literal('messages'),
  id: requestIdSchema,
  messages: z.array(deliveredMessageSchema).max(MAX_RECEIVE_MESSAGES),
});

/** The answer to `changeInvisibleDuration`: the new receipt handle; the old one is dead (S4). */
export const invisibilityChangedFrameSchema = z.object({
  type: z.literal('invisibilityChanged'),
  id: requestIdSchema,
  messageId: messageIdSchema,
  receiptHandle: receiptHandleSchema,
});

/**
 * The answer to an `adminCall`: the call's answer as it is (absent when it is `undefined`, "no
 * such thing"). The forwarding broker trusts the owner's answer as it trusts its own engine's.
 */
export const adminAnswerFrameSchema = z.object({
  type: z.literal('adminAnswer'),
  id: requestIdSchema,
  value: z.unknown().exactOptional(),
});

/** The answer to a request that returns nothing else (`register`, `unsubscribe`). */
export const okFrameSchema = z.object({ type: z.literal('ok'), id: requestIdSchema });

/**
 * A failed request (with its `id`) or a connection-level problem (without). Clients branch on
 * `code`, a catalogue code.
 */
export const errorFrameSchema = z.object({
  type: z.literal('error'),
  id: requestIdSchema.exactOptional(),
  ...errorPayloadSchema.shape,
});

/** Every frame a client may send. */
export const clientFrameSchema = z.discriminatedUnion('type', [
  helloFrameSchema,
  sendFrameSchema,
  registerFrameSchema,
  subscribeFrameSchema,
  unsubscribeFrameSchema,
  creditFrameSchema,
  ackFrameSchema,
  nackFrameSchema,
  releaseFrameSchema,
  receiveFrameSchema,
  changeInvisibleDurationFrameSchema,
  adminCallFrameSchema,
]);

/** Every frame the broker may send. */
export const brokerFrameSchema = z.discriminatedUnion('type', [
  welcomeFrameSchema,
  sendResultFrameSchema,
  subscribedFrameSchema,
  deliverFrameSchema,
  creditWantedFrameSchema,
  creditReturnedFrameSchema,
  settledFrameSchema,
  messagesFrameSchema,
  invisibilityChangedFrameSchema,
  okFrameSchema,
  errorFrameSchema,
  queueMapFrameSchema,
  adminAnswerFrameSchema,
]);

/** Every frame of the protocol. */
export const frameSchema = z.discriminatedUnion('type', [
  ...clientFrameSchema.options,
  ...brokerFrameSchema.options,
]);

export type HelloFrame = z.infer<typeof helloFrameSchema>;
export type SendFrame = z.infer<typeof sendFrameSchema>;
export type RegisterFrame = z.infer<typeof registerFrameSchema>;
export type SubscribeFrame = z.infer<typeof subscribeFrameSchema>;
export type UnsubscribeFrame = z.infer<typeof unsubscribeFrameSchema>;
export type CreditFrame = z.infer<typeof creditFrameSchema>;
export type AckFrame = z.infer<typeof ackFrameSchema>;
export type NackFrame = z.infer<typeof nackFrameSchema>;
export type ReleaseFrame = z.infer<typeof releaseFrameSchema>;
export type ReceiveFrame = z.infer<typeof receiveFrameSchema>;
export type ChangeInvisibleDurationFrame = z.infer<typeof changeInvisibleDurationFrameSchema>;
export type AdminCallFrame = z.infer<typeof adminCallFrameSchema>;
export type AdminAnswerFrame = z.infer<typeof adminAnswerFrameSchema>;
export type WelcomeFrame = z.infer<typeof welcomeFrameSchema>;
export type SendReceipt = z.infer<typeof sendReceiptSchema>;
export type SendResultFrame = z.infer<typeof sendResultFrameSchema>;
export type SubscribedFrame = z.infer<typeof subscribedFrameSchema>;
export type DeliverFrame = z.infer<typeof deliverFrameSchema>;
export type CreditWantedFrame = z.infer<typeof creditWantedFrameSchema>;
export type CreditReturnedFrame = z.infer<typeof creditReturnedFrameSchema>;
export type OnBehalfOf = z.infer<typeof onBehalfOfSchema>;
export type SettledFrame = z.infer<typeof settledFrameSchema>;
export type MessagesFrame = z.infer<typeof messagesFrameSchema>;
export type InvisibilityChangedFrame = z.infer<typeof invisibilityChangedFrameSchema>;
export type OkFrame = z.infer<typeof okFrameSchema>;
export type QueueMapFrame = z.infer<typeof queueMapFrameSchema>;
export type ErrorFrame = z.infer<typeof errorFrameSchema>;
export type ClientFrame = z.infer<typeof clientFrameSchema>;
export type BrokerFrame = z.infer<typeof brokerFrameSchema>;
export type Frame = z.infer<typeof frameSchema>;
export type FrameType = Frame['type'];
/** A client frame that expects an answer carrying the same `id`. */
export type ClientRequestFrame = Extract<ClientFrame, { id: number }>;
