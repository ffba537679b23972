import { ADMIN_CALL_ARGS, type AdminCallName, BrokerError, deliveredMessageBytes } from '@ricochet/protocol';
import type { AdminService } from './broker-service.js';
import type { DeadLetterPage } from './dead-letter/dead-letter-admin.js';

/** The arguments of admin call `K`, as the owner's {@link AdminService} takes them. */
export type AdminCallArgs<K extends AdminCallName> = Parameters<AdminService[K]>;
/** The answer of admin call `K`, as the owner's {@link AdminService} gives it. */
export type AdminCallAnswer<K extends AdminCallName> = Awaited<ReturnType<AdminService[K]>>;

/**
 * Make admin call `call` of one queue, wherever the queue is: its engine here, its owner over a
 * session between brokers, or nowhere while it is between owners. What `PartitionRouter` asks of
 * each queue for the admin face, in one method instead of one per call.
 */
export type QueueAdminCall = <K extends AdminCallName>(
  call: K,
  ...args: AdminCallArgs<K>
) => Promise<AdminCallAnswer<K>>;

/**
 * One row of {@link QUEUE_ADMIN_CALLS}: how a call of one queue behaves when forwarded to the
 * queue's owner.
 */
type AdminCallRow<K extends AdminCallName> =
  | {
      /**
       * A read: nothing changes on the owner, so it is asked again on the queue's next route when
       * its owner went away mid-call, and a listing during a queue move answers instead of failing.
       */
      readonly kind: 'read';
      /**
       * What the queue answers while it is between owners: nothing is known of it, so it counts
       * as empty (the merged answer over every queue is what the owned queues hold).
       */
      readonly betweenOwners: () => AdminCallAnswer<K>;
      /**
       * The answer cut to fit a frame of `maxBytes` of messages (a DLQ page stops early, with
       * its cursor where the next page starts); absent for an answer that is small by nature.
       */
      readonly fit?: (answer: AdminCallAnswer<K>, maxBytes: number) => AdminCallAnswer<K>;
    }
  | {
      /** A write: refused with `503` while the queue is between owners, as a send is. */
      readonly kind: 'write';
      /**
       * Whether it may be made again on the queue's next route after a `503` (the owner went away
       * mid-call, or the queue was between owners): a write that sets a state may, since making
       * it twice leaves the state it asked for; a redrive may not (the router paces it itself).
       */
      readonly madeAgain: boolean;
    };

/**
 * Every admin call one broker makes of another's queue (`ADMIN_CALL_NAMES`, the `adminCall` frame),
 * one row each: the one table of forwarded admin calls. A name here is the same-named
 * {@link AdminService} call of the owner's queue, with its arguments and answer unchanged; the
 * forwarding side (`cluster/peers/peer-admin.ts`) and the owner (`answerAdminCall`) both go by it.
 */
export const QUEUE_ADMIN_CALLS = {
  putTopic: { kind: 'write', madeAgain: true },
  describeTopic: { kind: 'read', betweenOwners: () => undefined },
  topicBacklog: { kind: 'read', betweenOwners: () => undefined },
  listTopics: { kind: 'read', betweenOwners: () => ({ items: [], lastName: null }) },
  putGroup: { kind: 'write', madeAgain: true },
  describeGroup: { kind: 'read', betweenOwners: () => undefined },
  pauseGroup: { kind: 'write', madeAgain: true },
  listGroups: { kind: 'read', betweenOwners: () => ({ items: [], lastName: null }) },
  describeMessage: { kind: 'read', betweenOwners: () => undefined },
  listDeadLetters: {
    kind: 'read',
    betweenOwners: () => ({ messages: [], cursor: null }),
    fit: fitDeadLetterPage,
  },
  redrive: { kind: 'write', madeAgain: false },
  fifoHeads: { kind: 'read', betweenOwners: () => [] },
  // Unknown while nobody owns the queue: counted as nothing by the watermarks.
  storedBytes: { kind: 'read', betweenOwners: () => 0 },
} as const satisfies { readonly [K in AdminCallName]: AdminCallRow<K> };

/**
 * The admin calls made again on a queue's next route when they met the queue between owners or its
 * owner went away mid-call (`RerouteWaits.onEveryOwner`): every read, and the writes that set a state.
 */
export type RepeatableAdminCall = {
  [K in AdminCallName]: (typeof QUEUE_ADMIN_CALLS)[K] extends
    | { readonly kind: 'read' }
    | { readonly madeAgain: true }
    ? K
    : never;
}[AdminCallName];

/**
 * Make admin call `call` of `service` (`AdminService`, a queue's engine) with `args` as another
 * broker sent them (`adminCall`), its answer cut to fit `maxAnswerBytes` of messages. The
 * arguments are checked first (`ADMIN_CALL_ARGS`): a call the admin API would refuse is refused
 * here too, `400`, and changes nothing. MessagePack has no `undefined`, so an argument sent as
 * `nil` (left out) is passed as `undefined`: no admin call takes `null`.
 */
export async function answerAdminCall(
  service: AdminService,
  call: AdminCallName,
  args: readonly unknown[],
  maxAnswerBytes: number,
): Promise<unknown> {
  const checked = ADMIN_CALL_ARGS[call].safeParse(args);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` (argument ${issue.path.join('.')})`;
    throw BrokerError.of('BAD_REQUEST', `${call}: ${issue?.message ?? 'invalid arguments'}${where}`);
  }
  const method = service[call] as (...given: unknown[]) => unknown;
  const answer = await method.apply(
    service,
    (checked.data as readonly unknown[]).map((arg) => (arg === null ? undefined : arg)),
  );
  const row = QUEUE_ADMIN_CALLS[call] as AdminCallRow<AdminCallName>;
  return row.kind === 'read' && row.fit !== undefined && answer !== undefined
    ? (row.fit as (answer: unknown, maxBytes: number) => unknown)(answer, maxAnswerBytes)
    : answer;
}

/**
 * What queue `queue` answers for `call` while it is between owners: a read's empty answer, or a
 * write's `503`, which clients and the router's reroute waits (`RerouteWaits`) try again.
 */
export function answerBetweenOwners<K extends AdminCallName>(queue: number, call: K): AdminCallAnswer<K> {
  const row = QUEUE_ADMIN_CALLS[call] as AdminCallRow<K>;
  if (row.kind === 'read') return row.betweenOwners();
  throw BrokerError.of('BROKER_UNAVAILABLE', `queue ${queue} is between owners; try again`, { queue });
}

/**
 * A DLQ page cut to the messages whose bytes fit `maxBytes` (at least one, which travels alone
 * when it is larger), its cursor then at the first message left out: a page of the DLQ is up to
 * 1,000 messages of up to the body limit each, far past what one frame carries.
 */
function fitDeadLetterPage(page: DeadLetterPage, maxBytes: number): DeadLetterPage {
  let bytes = 0;
  let kept = 0;
  for (const message of page.messages) {
    bytes += deliveredMessageBytes(message);
    if (bytes > maxBytes && kept > 0) break;
    kept++;
  }
  if (kept === page.messages.length) return page;
  const next = page.messages[kept];
  return { messages: page.messages.slice(0, kept), cursor: next?.offset ?? page.cursor };
}
