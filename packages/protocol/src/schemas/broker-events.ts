import { z } from 'zod';
import { deadLetterEntrySchema } from './admin.js';

/** The types of event `GET /v1/events` streams (X7), each filterable with `?type=`. */
export const BROKER_EVENT_TYPES = [
  'dead_lettered',
  'group_paused',
  'group_resumed',
  'redrive_progress',
] as const;

/** One of {@link BROKER_EVENT_TYPES}. */
export type BrokerEventType = (typeof BROKER_EVENT_TYPES)[number];

const eventFields = {
  /** The group the event is about: `?group=` filters on it, and a principal sees only its own. */
  group: z.string(),
  /** When it happened (epoch ms, the broker's clock). */
  atMs: z.number(),
};

/** Whether a pause or resume came from an operator (`manual`) or the failure-storm rule (`failures`). */
const holdingFields = {
  ...eventFields,
  cause: z.enum(['manual', 'failures']),
  /** Why, in words: `paused by hand`, `failure-storm breaker closed → open: deliveries held` … */
  why: z.string(),
};

/**
 * An event of `GET /v1/events` (X7), the JSON of one server-sent event's `data:` line; its SSE
 * `event:` line carries the same `type`. A `dead_lettered` event carries the DLQ entry as
 * `GET /v1/groups/:group/dlq` lists it, every field of it (the schema keeps fields it does not name).
 */
export const brokerEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('dead_lettered'), ...eventFields, entry: deadLetterEntrySchema.loose() }),
  z.object({ type: z.literal('group_paused'), ...holdingFields }),
  z.object({ type: z.literal('group_resumed'), ...holdingFields }),
  z.object({
    type: z.literal('redrive_progress'),
    ...eventFields,
    /** Messages of this redrive made Ready again so far. */
    redriven: z.number(),
    /** Messages this redrive takes in all. */
    total: z.number(),
  }),
]);

/** An event of the broker's event stream. */
export type BrokerEvent = z.infer<typeof brokerEventSchema>;
