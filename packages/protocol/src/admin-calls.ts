import { z } from 'zod';
import { groupConfigInputSchema, topicConfigSchema } from './schemas/config.js';
import { groupNameSchema, messageIdSchema, topicNameSchema } from './schemas/primitives.js';

/**
 * The admin calls one broker makes of another on a session between brokers (`hello.queue`): a
 * broker whose store is split into queues answers an operator's admin request over every queue,
 * and asks each queue another broker owns of that owner. Each name is the owner's admin call of
 * that queue, with the same arguments and answer, carried as MessagePack values in an `adminCall`
 * frame and its `adminAnswer` (docs/protocol/README.md#admin-calls-between-brokers).
 */
export const ADMIN_CALL_NAMES = [
  'putTopic',
  'describeTopic',
  'topicBacklog',
  'listTopics',
  'putGroup',
  'describeGroup',
  'pauseGroup',
  'listGroups',
  'describeMessage',
  'listDeadLetters',
  'redrive',
  'fifoHeads',
  'storedBytes',
] as const;

/** One of {@link ADMIN_CALL_NAMES}. */
export type AdminCallName = (typeof ADMIN_CALL_NAMES)[number];

/**
 * The feature a broker names in `hello.features` of a session between brokers to make admin calls
 * on it (`adminCall`), and that the owner names in `welcome.features` when it answers them. An
 * owner that predates it does not name it; the forwarding broker then asks that owner's admin
 * HTTP API instead, as brokers did before, until every broker of the cluster runs this release.
 */
export const ADMIN_CALLS_FEATURE = 'adminCalls';

/** A name to look up: any string (a name that cannot exist is simply not found). */
const lookedUp = z.string().max(1_024);
/** Where a page by name continues: after this name, or from the first (`nil`). */
const afterName = z.string().max(1_024).nullable();
/** A page's size, as the admin API takes it. */
const pageLimit = z.number().int().min(1).max(1_000);

/**
 * The arguments of each admin call, as the owner checks them before it makes the call: what the
 * admin API's routes check of an operator's request (names, configs, page sizes, a redrive's
 * ids and rate), so a forwarding broker's mistake is refused with `400 BAD_REQUEST` and changes
 * nothing, as an operator's is. An argument left out is `nil`.
 */
export const ADMIN_CALL_ARGS = {
  putTopic: z.tuple([topicNameSchema, topicConfigSchema]),
  describeTopic: z.tuple([lookedUp]),
  topicBacklog: z.tuple([lookedUp]),
  listTopics: z.tuple([afterName, pageLimit]),
  putGroup: z.tuple([groupNameSchema, groupConfigInputSchema]),
  describeGroup: z.tuple([lookedUp]),
  pauseGroup: z.tuple([lookedUp, z.boolean()]),
  listGroups: z.tuple([afterName, pageLimit]),
  describeMessage: z.tuple([lookedUp]),
  listDeadLetters: z.tuple([lookedUp, z.number().int().min(0), pageLimit]),
  redrive: z.tuple([
    lookedUp,
    z
      .object({
        messageIds: z.array(messageIdSchema).min(1).max(10_000).optional(),
        ratePerSecond: z.number().positive().max(100_000).optional(),
      })
      .strict(),
  ]),
  fifoHeads: z.tuple([lookedUp, pageLimit]),
  storedBytes: z.tuple([]),
} as const satisfies { readonly [K in AdminCallName]: z.ZodType };
