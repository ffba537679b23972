import { z } from 'zod';
import { clusterViewSchema } from './cluster.js';
import { groupConfigSchema, topicConfigShape } from './config.js';
import { groupPauseViewSchema } from './group-pause.js';

/*
 * The admin API's JSON answers (DESIGN.md §4, §8; docs/guides/operations.md), once: the broker
 * checks every answer against these, and the CLI, the testing kit and the dashboard read them with
 * these. Objects are `z.object`, not strict: a field a newer broker adds passes the check, and a
 * reader that keeps the answer it parsed (the CLI's `--json`) shows it untouched.
 */

/** A topic's config as an answer shows it: the PUT's fields, the retention the broker uses spelled out. */
export const topicConfigViewSchema = z.object(topicConfigShape);

/** A topic's offsets (DESIGN.md §5). */
export const topicStatsSchema = z.object({
  /** The lowest offset still stored: retention deleted every message below it. */
  firstOffset: z.number(),
  /** The offset the next message will get. */
  nextOffset: z.number(),
  /** Messages retained: from `firstOffset` to `nextOffset`, less those retention deleted around held ones. */
  messages: z.number(),
});

/** A topic's offsets, as `GET /v1/topics/:topic` shows them. */
export type TopicStats = z.infer<typeof topicStatsSchema>;

/** `PUT /v1/topics/:topic`: the topic's name and the config it now has (no stats). */
export const topicSavedSchema = z.object({ name: z.string(), config: topicConfigViewSchema });

/** The answer of a topic's PUT. */
export type TopicSaved = z.infer<typeof topicSavedSchema>;

/** `GET /v1/topics/:topic` and each item of `GET /v1/topics`. */
export const topicViewSchema = z.object({
  name: z.string(),
  config: topicConfigViewSchema,
  stats: topicStatsSchema,
});

/** A topic as the admin API shows it. */
export type TopicView = z.infer<typeof topicViewSchema>;

/** `GET /v1/topics?cursor=&limit=`: a page of topics by name; `cursor` is `null` after the last page. */
export const topicPageSchema = z.object({
  topics: z.array(topicViewSchema).readonly(),
  cursor: z.string().nullable(),
});

/** A page of `GET /v1/topics`. */
export type TopicPage = z.infer<typeof topicPageSchema>;

/** `GET /v1/topics/:topic/backlog`: R4 for a topic, its limit and the backlog of each group reading it. */
export const topicBacklogSchema = z.object({
  topic: z.string(),
  /** Absent when the topic has no limit (never throttled). */
  maxBacklogMessages: z.number().optional(),
  groups: z.array(z.object({ group: z.string(), backlog: z.number() })).readonly(),
});

/** R4 for a topic, as `GET /v1/topics/:topic/backlog` shows it. */
export type TopicBacklog = z.infer<typeof topicBacklogSchema>;

/** A group's numbers (DESIGN.md §4). */
export const groupStatsSchema = z.object({
  /** Never dispatched yet, plus Ready again (released, retry or lease expired, delay due). */
  ready: z.number(),
  inflight: z.number(),
  waitingRetry: z.number(),
  /** Dead-lettered and not redriven since. */
  dlq: z.number(),
  committed: z.number(),
});

/** A group's numbers, as `GET /v1/groups/:group` shows them. */
export type GroupStats = z.infer<typeof groupStatsSchema>;

/** Per topic the group reads: its cursor (the next offset to dispatch) and the topic's first retained offset. */
export const groupPositionsSchema = z.record(
  z.string(),
  z.object({ cursor: z.number(), firstOffset: z.number() }),
);

/** A group's position in each topic it reads. */
export type GroupPositions = z.infer<typeof groupPositionsSchema>;

/** `GET /v1/groups/:group`, `PUT /v1/groups/:group` and each item of `GET /v1/groups`. */
export const groupViewSchema = z.object({
  name: z.string(),
  config: groupConfigSchema,
  stats: groupStatsSchema.extend({ topics: groupPositionsSchema }),
  /** Absent from brokers before failure storms existed. */
  pause: groupPauseViewSchema.optional(),
});

/** A group as the admin API shows it: its config and stats. */
export type GroupView = z.infer<typeof groupViewSchema>;

/** `GET /v1/groups?cursor=&limit=`: a page of groups by name; `cursor` is `null` after the last page. */
export const groupPageSchema = z.object({
  groups: z.array(groupViewSchema).readonly(),
  cursor: z.string().nullable(),
});

/** A page of `GET /v1/groups`. */
export type GroupPage = z.infer<typeof groupPageSchema>;

/** The fields every stored message shows, its body as its size and base64. */
const storedMessageFields = {
  messageId: z.string(),
  offset: z.number(),
  tag: z.string().optional(),
  keys: z.array(z.string()).readonly().optional(),
  messageGroup: z.string().optional(),
  properties: z.record(z.string(), z.string()).optional(),
  /** When the producer made it (the producer's clock). */
  bornAt: z.number(),
  /** A delay message is invisible to every group until this time (T1). */
  deliverAt: z.number().optional(),
  bodyBytes: z.number(),
  bodyBase64: z.string(),
};

/**
 * The failure record of a DLQ entry (X6), beside its attempts and last reason; absent from entries
 * dead-lettered before it existed. `cause` is a string, not an enum, so a reader takes causes
 * added later: `maxRetries`, `consumptionTimeout`, `retryBudget`, `deadLetterNow`, `nonRetryable`.
 */
const failureRecordFields = {
  /** Why it went to the DLQ, machine-readable (X6). */
  cause: z.string().optional(),
  /** When its first failure happened (epoch ms, the broker's clock). */
  firstFailedAt: z.number().optional(),
};

/** One message of a group's DLQ, `%DLQ%<group>` (D1). */
export const deadLetterEntrySchema = z.object({
  ...storedMessageFields,
  /** The topic the message was sent to. */
  originTopic: z.string(),
  originOffset: z.number(),
  /** Deliveries that counted toward `maxRetries`. */
  attempts: z.number(),
  /** The last failure's reason (`the listener returned FAILURE`, a thrown error's message …). */
  reason: z.string(),
  /** When it moved to the DLQ (epoch ms, the broker's clock). */
  deadLetteredAt: z.number(),
  ...failureRecordFields,
});

/** One message of a group's DLQ, as `GET /v1/groups/:group/dlq` lists it. */
export type DeadLetterEntry = z.infer<typeof deadLetterEntrySchema>;

/** `GET /v1/groups/:group/dlq?cursor=&limit=`: `cursor` is the DLQ offset to go on from, `null` after the last page. */
export const deadLetterPageSchema = z.object({
  messages: z.array(deadLetterEntrySchema).readonly(),
  cursor: z.number().nullable(),
});

/** A page of a group's DLQ. */
export type DeadLetterPage = z.infer<typeof deadLetterPageSchema>;

/** `POST /v1/groups/:group/dlq/redrive` (202): how many messages will be redriven (D2). */
export const redriveAnswerSchema = z.object({ accepted: z.number() });

/** The answer of a redrive. */
export type RedriveAnswer = z.infer<typeof redriveAnswerSchema>;

/**
 * One delivery of a message to a group and how it was settled; or `held` (`group paused`), a retry
 * that fell due, at `deliveredAt`, while its group was paused, and waited (DESIGN.md §11).
 */
export const deliveryHistoryEntrySchema = z.object({
  group: z.string(),
  /** Broadcasting groups (B1): the instance (`clientId`) this delivery was for. */
  instance: z.string().optional(),
  topic: z.string(),
  offset: z.number(),
  deliveryAttempt: z.number(),
  consumer: z.enum(['push', 'simple']),
  consumerId: z.string().optional(),
  deliveredAt: z.number(),
  settledAt: z.number(),
  /** `postponed`: the listener postponed it without a failure (X4). */
  result: z.enum([
    'committed',
    'failed',
    'timedOut',
    'leaseExpired',
    'released',
    'deadLettered',
    'held',
    'postponed',
  ]),
  reason: z.string().optional(),
  /** `deadLettered`: why it went to the DLQ, machine-readable, as the DLQ entry says it (X6). */
  cause: z.string().optional(),
  /** The principal (DESIGN.md §7) whose ack, nack or release settled it; absent when the broker did. */
  principal: z.string().optional(),
});

/** One delivery of a message, as `GET /v1/messages/:messageId` lists them. */
export type DeliveryHistoryEntry = z.infer<typeof deliveryHistoryEntrySchema>;

/** Where a message stands for one group (or one instance of a broadcasting group, B1). */
export const messageGroupViewSchema = z.object({
  group: z.string(),
  /** Broadcasting groups (B1): the instance this entry is for; such a group has one entry per instance. */
  instance: z.string().optional(),
  /** `failed`: a broadcast instance's delivery failed or timed out; it is not retried (B1). */
  state: z.enum(['pending', 'ready', 'inflight', 'waitingRetry', 'committed', 'dlq', 'skipped', 'failed']),
  deliveryAttempt: z.number().optional(),
  history: z.array(deliveryHistoryEntrySchema).readonly(),
});

/** Where a message stands for one group. */
export type MessageGroupView = z.infer<typeof messageGroupViewSchema>;

/** A stored message, as `GET /v1/messages/:messageId` shows it. */
export const storedMessageViewSchema = z.object({
  ...storedMessageFields,
  topic: z.string(),
  /** When the broker stored it (the broker's clock). */
  storedAt: z.number(),
  /** Present on the copies in a `%DLQ%<group>` topic (D1). */
  deadLetter: z
    .object({
      group: z.string(),
      originTopic: z.string(),
      originOffset: z.number(),
      attempts: z.number(),
      reason: z.string(),
      deadLetteredAt: z.number(),
      ...failureRecordFields,
    })
    .optional(),
});

/** A stored message with its body as base64. */
export type StoredMessageView = z.infer<typeof storedMessageViewSchema>;

/** `GET /v1/messages/:messageId`: the message and where it stands in every group that reads its topic. */
export const messageViewSchema = z.object({
  message: storedMessageViewSchema,
  groups: z.array(messageGroupViewSchema).readonly(),
});

/** A message and its delivery history per group. */
export type MessageView = z.infer<typeof messageViewSchema>;

/** A FIFO message group held by its head (P5): later messages of it wait until the head settles. */
export const fifoHeadViewSchema = z.object({
  topic: z.string(),
  messageGroup: z.string(),
  /** The head: the message every later one of its message group waits behind. */
  offset: z.number(),
  messageId: z.string().optional(),
  /** Where the head stands: handed out, waiting for its retry, or Ready to go again. */
  state: z.enum(['ready', 'inflight', 'waitingRetry', 'unknown']),
  /** The head's delivery attempt: the current one while Inflight, else the next one (1 on the first). */
  deliveryAttempt: z.number().optional(),
  /** When the head's next retry fires (epoch ms), while it waits for one. */
  retryAtMs: z.number().optional(),
});

/** A FIFO message group and its head. */
export type FifoHeadView = z.infer<typeof fifoHeadViewSchema>;

/** `GET /v1/groups/:group/fifo?limit=`: the message groups a head holds now (empty for a group that is not FIFO). */
export const fifoHeadsAnswerSchema = z.object({ messageGroups: z.array(fifoHeadViewSchema).readonly() });

/** The answer of `GET /v1/groups/:group/fifo`. */
export type FifoHeadsAnswer = z.infer<typeof fifoHeadsAnswerSchema>;

/** `GET /v1/counters`: counts since the broker started (not stored across restarts). */
export const counterTotalsSchema = z.object({
  topics: z.array(z.object({ name: z.string(), sent: z.number() })).readonly(),
  groups: z
    .array(
      z.object({
        name: z.string(),
        delivered: z.number(),
        acked: z.number(),
        retried: z.number(),
        deadLettered: z.number(),
        released: z.number(),
      }),
    )
    .readonly(),
});

/** Messages sent per topic, and delivered, acked, retried, dead-lettered and released per group. */
export type CounterTotals = z.infer<typeof counterTotalsSchema>;

/** `GET /v1/store`: the bytes the store holds, the figure `--max-store-bytes` compares against. */
export const storeAnswerSchema = z.object({ storedBytes: z.number() });

/** The answer of `GET /v1/store`. */
export type StoreAnswer = z.infer<typeof storeAnswerSchema>;

/** `GET /healthz`: `ok` (200) while serving, `draining` (503) while shutting down. */
export const healthAnswerSchema = z.object({ status: z.enum(['ok', 'draining']) });

/** The answer of `GET /healthz`. */
export type HealthAnswer = z.infer<typeof healthAnswerSchema>;

/**
 * `GET /readyz`: `ready` (200) once the broker serves every queue it should: at once on the
 * embedded store (it listens only once its store is open), and with queues spread over brokers
 * once every queue has an owner here or elsewhere. 503 before, and while it drains, with the
 * reason: `draining`, or `unowned` with the queues that have no owner yet (`queuesWithoutOwner`).
 */
export const readinessAnswerSchema = z.object({
  status: z.enum(['ready', 'draining', 'unowned']),
  reason: z.string().optional(),
  queuesWithoutOwner: z.array(z.number().int().min(0)).readonly().optional(),
});

/** The answer of `GET /readyz`. */
export type ReadinessAnswer = z.infer<typeof readinessAnswerSchema>;

/** Every error answer of the admin API: the catalogue code and name, and for a bad body its issues. */
export const adminErrorAnswerSchema = z.object({
  error: z.object({
    code: z.number(),
    name: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
    issues: z
      .array(z.object({ path: z.array(z.string()), message: z.string() }))
      .readonly()
      .optional(),
  }),
});

/** An error answer of the admin API. */
export type AdminErrorAnswer = z.infer<typeof adminErrorAnswerSchema>;

/**
 * The schema of each route's successful answer, by `METHOD path` as the routes are declared (the
 * broker checks its answers with this table; `/metrics` answers text, not JSON).
 */
export const ADMIN_ANSWER_SCHEMAS = {
  'GET /healthz': healthAnswerSchema,
  'GET /readyz': readinessAnswerSchema,
  'GET /v1/topics': topicPageSchema,
  'GET /v1/topics/:topic': topicViewSchema,
  'PUT /v1/topics/:topic': topicSavedSchema,
  'GET /v1/topics/:topic/backlog': topicBacklogSchema,
  'GET /v1/groups': groupPageSchema,
  'GET /v1/groups/:group': groupViewSchema,
  'PUT /v1/groups/:group': groupViewSchema,
  'GET /v1/groups/:group/dlq': deadLetterPageSchema,
  'POST /v1/groups/:group/dlq/redrive': redriveAnswerSchema,
  'GET /v1/groups/:group/fifo': fifoHeadsAnswerSchema,
  'POST /v1/groups/:group/pause': groupViewSchema,
  'POST /v1/groups/:group/resume': groupViewSchema,
  'GET /v1/messages/:messageId': messageViewSchema,
  'GET /v1/counters': counterTotalsSchema,
  'GET /v1/store': storeAnswerSchema,
  'GET /v1/cluster': clusterViewSchema,
} as const satisfies Record<string, z.ZodType>;

/** A route of the admin API that answers JSON, as `METHOD path`. */
export type AdminRoute = keyof typeof ADMIN_ANSWER_SCHEMAS;

/** What {@link checkAdminAnswer} found: the answer as it came, typed, or what does not match. */
export type AdminAnswerCheck<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problem: string };

/**
 * Check an answer against its schema. On success the answer comes back as it was, not as zod's
 * copy, so fields a newer broker adds are kept (the CLI's `--json` prints them); on a mismatch,
 * `problem` names each field that does not match, path by path.
 */
export function checkAdminAnswer<S extends z.ZodType>(
  schema: S,
  answer: unknown,
): AdminAnswerCheck<z.output<S>> {
  const result = schema.safeParse(answer);
  if (result.success) return { ok: true, value: answer as z.output<S> };
  const problem = result.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(answer)'}: ${issue.message}`)
    .join('; ');
  return { ok: false, problem };
}

/** The answer of a route, as its schema in {@link ADMIN_ANSWER_SCHEMAS} types it. */
export type AdminAnswer<R extends AdminRoute> = z.output<(typeof ADMIN_ANSWER_SCHEMAS)[R]>;
