import { BrokerError, type ClientFrame, type SendReceipt } from '@ricochet/protocol';
import type { AccessControl, Caller } from '../auth/access-control.js';
import type { Principal } from '../auth/auth-file.js';
import type { Action } from '../auth/permissions.js';
import type { RocketSignatureParse } from '../auth/rocketmq-signature.js';
import { groupAndTopicOfHandle } from '../engine/index.js';

/** A frame that asks the engine for something (everything but `hello` and `credit`). */
export type RequestFrame = Exclude<ClientFrame, { type: 'hello' | 'credit' }>;

/**
 * May the session's principal send this frame? `principal` names who settles, for the delivery
 * history; `forbidden` holds the refusals of single messages of a `send`, by index (the others
 * go through). A refusal of the whole frame says whether the session must end (its token was
 * removed by a reload: 401, close 1008).
 */
export type FrameVerdict =
  | {
      readonly ok: true;
      readonly principal: string | undefined;
      readonly forbidden?: ReadonlyMap<number, BrokerError>;
    }
  | { readonly ok: false; readonly error: BrokerError; readonly endSession: boolean };

const ALLOWED_ANONYMOUSLY: FrameVerdict = { ok: true, principal: undefined };

/**
 * One session's side of access control (DESIGN.md §7): the token of its `hello`, then a verdict
 * on every request frame before the engine sees it. The checks use only the names the frame
 * carries (topics, groups, the group and topic a receipt handle names), never the broker's state:
 * a refusal changes nothing and cannot tell whether anything exists.
 */
export class SessionAccess {
  readonly #access: AccessControl;
  #caller: Caller | undefined;

  constructor(access: AccessControl) {
    this.#access = access;
  }

  /** Check `hello`'s token; the refusal's message, or `undefined` when the session may open. */
  hello(token: string | undefined): string | undefined {
    if (!this.#access.enabled) return undefined;
    const authn = this.#access.authenticate(token, 'websocket');
    if (!authn.ok) return authn.message;
    this.#caller = authn.caller;
    return undefined;
  }

  /**
   * Check a RocketMQ client's signed request (`--grpc-port`) as `hello` checks a token; the
   * refusal's message, or `undefined` when the request may go on.
   */
  signed(parsed: RocketSignatureParse | undefined): string | undefined {
    if (!this.#access.enabled) return undefined;
    const authn = this.#access.authenticateSignature(parsed, 'grpc');
    if (!authn.ok) return authn.message;
    this.#caller = authn.caller;
    return undefined;
  }

  /** The verdict on one request frame. */
  check(frame: RequestFrame): FrameVerdict {
    if (frame.type === 'send') return this.checkSend(frame.messages);
    // Without access control, nothing is checked: a settle frame's handles are not decoded twice.
    return this.#checkedCaller() === undefined ? ALLOWED_ANONYMOUSLY : this.checkActions(actionsOf(frame));
  }

  /** The caller whose requests are checked, or `undefined` when access control is off or no one authenticated. */
  #checkedCaller(): Caller | undefined {
    return this.#access.enabled ? this.#caller : undefined;
  }

  /** The verdict on a request that asks for `actions` (the RocketMQ front door's requests). */
  checkActions(actions: readonly Action[]): FrameVerdict {
    const caller = this.#checkedCaller();
    if (caller === undefined) return ALLOWED_ANONYMOUSLY;
    let principal: string | undefined;
    for (const action of actions) {
      const decision = this.#access.authorize(caller, action, 'websocket');
      if (!decision.ok) return refusal(decision.status, decision.message);
      principal = decision.principal.name;
    }
    // A frame with no action to check (unsubscribe, or only malformed handles) still names its principal.
    return { ok: true, principal: principal ?? caller.principal?.name };
  }

  /** Each message needs `publish` on its topic; the principal's rate covers those that may go. */
  checkSend(messages: readonly { readonly topic: string }[]): FrameVerdict {
    const caller = this.#checkedCaller();
    if (caller === undefined) return ALLOWED_ANONYMOUSLY;
    const forbidden = new Map<number, BrokerError>();
    const verdictOfTopic = new Map<string, BrokerError | undefined>();
    let principal: Principal | undefined;
    for (const [index, { topic }] of messages.entries()) {
      if (!verdictOfTopic.has(topic)) {
        const decision = this.#access.authorize(caller, { type: 'publish', topic }, 'websocket');
        if (!decision.ok && decision.status === 401) return refusal(401, decision.message);
        verdictOfTopic.set(
          topic,
          decision.ok ? undefined : BrokerError.of('FORBIDDEN', decision.message, { topic }),
        );
        if (decision.ok) principal = decision.principal;
      }
      const error = verdictOfTopic.get(topic);
      if (error) forbidden.set(index, error);
    }
    const allowed = messages.length - forbidden.size;
    if (principal && allowed > 0) {
      const admitted = this.#access.admitPublish(principal, allowed);
      if (!admitted.ok)
        return {
          ok: false,
          endSession: false,
          error: BrokerError.of(
            'TOO_MANY_REQUESTS',
            `principal "${principal.name}" is over its publishRatePerSecond of ${principal.publishRatePerSecond}; retry after ${admitted.retryAfterMs} ms`,
            { retryAfterMs: admitted.retryAfterMs },
          ),
        };
    }
    const name = principal?.name;
    return forbidden.size === 0 ? { ok: true, principal: name } : { ok: true, principal: name, forbidden };
  }
}

function refusal(status: 401 | 403, message: string): FrameVerdict {
  return {
    ok: false,
    endSession: status === 401,
    error: BrokerError.of(status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', message),
  };
}

/** The consume actions a request frame asks for (`send` is checked message by message). */
function actionsOf(frame: Exclude<RequestFrame, { type: 'send' }>): Action[] {
  switch (frame.type) {
    case 'subscribe':
    case 'register':
    case 'receive':
      return [{ type: 'consume', group: frame.group, topics: Object.keys(frame.subscriptions) }];
    case 'ack':
    case 'release':
      return actionsOfHandles(frame.receiptHandles);
    case 'nack':
      return actionsOfHandles(frame.items.map((item) => item.receiptHandle));
    case 'changeInvisibleDuration':
      return actionsOfHandles([frame.receiptHandle]);
    case 'unsubscribe':
      // Only this session's own subscriptions can be ended, and opening them was checked.
      return [];
    case 'adminCall':
      // Sessions between brokers only (the session refuses it on a client's before access is
      // judged); were it judged, it would be the admin API's write.
      return [{ type: 'admin', level: 'write' }];
  }
}

/**
 * Settling needs `consume` on the group and topic the handle names. A string without a handle's
 * shape names nothing: the engine answers it `INVALID_RECEIPT_HANDLE` as it does for anyone.
 */
export function actionsOfHandles(handles: readonly string[]): Action[] {
  const actions: Action[] = [];
  const topicsByGroup = new Map<string, Set<string>>();
  for (const text of handles) {
    const names = groupAndTopicOfHandle(text);
    if (!names) continue;
    let topics = topicsByGroup.get(names.group);
    if (!topics) {
      topics = new Set();
      topicsByGroup.set(names.group, topics);
    }
    if (topics.has(names.topic)) continue;
    topics.add(names.topic);
    actions.push({ type: 'consume', group: names.group, topics: [names.topic] });
  }
  return actions;
}

/**
 * Send the messages a verdict allows and answer for all of them, in order: a refused message gets
 * its `403` receipt and is never stored.
 */
export async function sendAllowed<TMessage>(
  messages: readonly TMessage[],
  forbidden: ReadonlyMap<number, BrokerError> | undefined,
  messageIdOf: (message: TMessage) => string,
  send: (messages: readonly TMessage[]) => Promise<SendReceipt[]>,
): Promise<SendReceipt[]> {
  if (forbidden === undefined || forbidden.size === 0) return send(messages);
  const allowed = messages.filter((_, index) => !forbidden.has(index));
  const receipts = allowed.length > 0 ? await send(allowed) : [];
  let next = 0;
  return messages.map((message, index) => {
    const error = forbidden.get(index);
    if (!error) return receipts[next++] as SendReceipt;
    return {
      ok: false,
      messageId: messageIdOf(message),
      error: {
        code: error.code,
        message: error.message,
        ...(error.details ? { details: { ...error.details } } : {}),
      },
    };
  });
}
