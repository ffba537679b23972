import { ADMIN_CALL_NAMES, type AdminCallName, BrokerError, type DeliveredMessage } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from '../../broker.test-support.js';
import type { AdminCallAnswer, AdminCallArgs, BrokerService, QueueAdminCall } from '../../engine/index.js';
import { RawClient } from '../../gateway/raw-client.test-support.js';
import { peerAdminCalls } from './peer-admin.js';
import { PeerConnection } from './peer-connection.js';
import { RemoteAdmin } from './remote-admin.js';

/**
 * The two ways a broker makes the admin calls of a queue another broker owns, each against a real
 * owner (queue 0 of a broker with a peer token): on the session between brokers (`adminCall`,
 * `peer-admin.ts`), and over the owner's admin API (`remote-admin.ts`, for an owner of an older
 * release). Each call must answer exactly what the owner's queue service answers for the same
 * call, in the same process.
 */
const PEER_TOKEN = 'peer-token-for-tests';

const messageId = (n: number) => `5000000000000000000000000000${String(n).padStart(4, '0')}`;

/** One way to the owner's queue 0: its admin calls, and how to let go of them. */
interface AdminPath {
  readonly admin: QueueAdminCall;
  close(): Promise<void>;
}

const PATHS: readonly { readonly path: string; readonly open: (url: string) => Promise<AdminPath> }[] = [
  {
    path: 'on the session between brokers',
    open: async (url) => {
      const connection = await PeerConnection.open({
        url,
        token: PEER_TOKEN,
        queue: 0,
        clientId: 'peer:admin-test',
        maxFrameBytes: 8 * 1024 * 1024,
      });
      return { admin: peerAdminCalls(connection), close: () => connection.close() };
    },
  },
  {
    path: "over the owner's admin API (an owner of an older release)",
    open: async (url) => ({
      admin: new RemoteAdmin({ url, token: PEER_TOKEN, queue: 0 }).call,
      close: async () => {},
    }),
  },
];

/** The calls of `admin` as methods by name, so a test reads as the engine's calls do. */
type AdminMethods = {
  readonly [K in AdminCallName]: (...args: AdminCallArgs<K>) => Promise<AdminCallAnswer<K>>;
};

function methodsOf(admin: QueueAdminCall): AdminMethods {
  return Object.fromEntries(
    ADMIN_CALL_NAMES.map((call) => [
      call,
      (...args: never[]) => (admin as (...given: unknown[]) => unknown)(call, ...args),
    ]),
  ) as unknown as AdminMethods;
}

/** A raw client, closed on dispose. */
async function connect(url: string): Promise<RawClient & AsyncDisposable> {
  const client = await RawClient.connect(url);
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

/**
 * Send messages, deliver them to a push consumer of `group` and nack each: failed once (retried at
 * the group's policy), or dead-lettered at once. The consumer then unsubscribes, holding nothing.
 */
async function sendAndNack(
  client: RawClient,
  group: string,
  topic: string,
  ids: readonly number[],
  deadLetter: boolean,
  body: (n: number) => Uint8Array = (n) => new Uint8Array([n, 0, 255]),
): Promise<void> {
  const subscriptionId = await client.subscribe(group, { [topic]: '*' }, ids.length);
  await client.request({
    type: 'send',
    messages: ids.map((n) => ({ messageId: messageId(n), topic, body: body(n), bornAt: n })),
  });
  const delivered: DeliveredMessage[] = [];
  while (delivered.length < ids.length) delivered.push(...(await client.nextDelivery()).messages);
  const nacked = await client.request({
    type: 'nack',
    items: delivered.map((message) => ({
      receiptHandle: message.receiptHandle,
      reason: deadLetter ? 'poison' : 'try again',
      ...(deadLetter ? { deadLetter: true as const } : {}),
    })),
  });
  expect(nacked).toMatchObject({ type: 'settled', failures: [] });
  expect(await client.request({ type: 'unsubscribe', subscriptionId })).toMatchObject({ type: 'ok' });
}

/** What a call rejects with, or `undefined` when it resolves. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe.each(PATHS)('admin calls of a remote queue $path', ({ open }) => {
  /** The owner, its queue 0 as its engine answers (`local`) and as the path reaches it (`remote`). */
  async function startOwner() {
    const owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const local = owner.engine.queueService(0) as BrokerService;
    const path = await open(owner.url);
    const close = async () => {
      await path.close();
      await owner.close();
    };
    return Object.assign(owner, { local, remote: methodsOf(path.admin), [Symbol.asyncDispose]: close });
  }

  it('puts, describes and lists topics, DLQ topics too, as the queue does', async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    const config = { type: 'normal' as const, retentionMs: 60_000, maxBacklogMessages: 10 };
    expect(await remote.putTopic('orders', config)).toEqual(await local.putTopic('orders', config));
    await remote.putTopic('audit', { type: 'fifo' });
    await remote.putGroup('billing', { startFrom: 'earliest' });
    await using client = await connect(owner.url);
    await sendAndNack(client, 'billing', 'orders', [1], true);

    for (const name of ['orders', 'audit', '%DLQ%billing', 'nothing'])
      expect(await remote.describeTopic(name), name).toEqual(await local.describeTopic(name));
    expect(await remote.describeTopic('nothing')).toBeUndefined();
    // Page by page, each continuing after the last name of the one before, `%DLQ%…` first.
    const first = await remote.listTopics(undefined, 1);
    expect(first).toEqual(await local.listTopics(undefined, 1));
    expect(first.lastName).toBe('%DLQ%billing');
    const second = await remote.listTopics(first.lastName ?? '', 1);
    expect(second).toEqual(await local.listTopics('%DLQ%billing', 1));
    expect(await remote.listTopics('audit', 10)).toEqual(await local.listTopics('audit', 10));
    expect((await remote.listTopics('audit', 10)).lastName).toBeNull();
  });

  it('puts, describes and lists groups with their retry policy and stats, as the queue does', async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    const input = {
      startFrom: 'earliest' as const,
      maxRetries: 3,
      retryPolicy: {
        type: 'exponential' as const,
        initialMs: 60_000,
        multiplier: 2,
        maxMs: 600_000,
        jitter: 0.1,
      },
    };
    expect(await remote.putGroup('billing', input)).toEqual(await local.putGroup('billing', input));
    await remote.putGroup('shipping', { retryPolicy: { type: 'stepped', delaysMs: [60_000, 120_000] } });
    await using client = await connect(owner.url);
    await sendAndNack(client, 'billing', 'orders', [1, 2], false);

    const billing = await remote.describeGroup('billing');
    expect(billing).toEqual(await local.describeGroup('billing'));
    expect(billing?.stats).toMatchObject({
      waitingRetry: 2,
      topics: { orders: { cursor: 2, firstOffset: 0 } },
    });
    expect(await remote.describeGroup('nothing')).toBeUndefined();
    expect(await remote.listGroups(undefined, 1)).toEqual(await local.listGroups(undefined, 1));
    expect(await remote.listGroups('billing', 1)).toEqual(await local.listGroups('billing', 1));
  });

  it('describes a message with its body and delivery history, as the queue does', async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    await remote.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 60_000 },
    });
    await using client = await connect(owner.url);
    await sendAndNack(client, 'billing', 'orders', [8], false);
    await client.request({
      type: 'send',
      messages: [
        {
          messageId: messageId(7),
          topic: 'orders',
          body: new Uint8Array([0, 1, 2, 254, 255]),
          bornAt: 7,
          tag: 'created',
          keys: ['order-7'],
          properties: { region: 'eu' },
        },
      ],
    });

    const seven = await remote.describeMessage(messageId(7));
    expect(seven).toEqual(await local.describeMessage(messageId(7)));
    expect([...(seven?.message.body ?? [])]).toEqual([0, 1, 2, 254, 255]);
    expect(seven?.groups).toEqual([{ group: 'billing', state: 'pending', history: [] }]);
    const eight = await remote.describeMessage(messageId(8));
    expect(eight).toEqual(await local.describeMessage(messageId(8)));
    expect(eight?.groups[0]).toMatchObject({ state: 'waitingRetry', history: [{ result: 'failed' }] });
    expect(await remote.describeMessage(messageId(9))).toBeUndefined();
  });

  it('lists the DLQ page by page and redrives, as the queue does', async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    await remote.putGroup('billing', { startFrom: 'earliest' });
    await using client = await connect(owner.url);
    await sendAndNack(client, 'billing', 'orders', [1, 2, 3], true);

    const all = await remote.listDeadLetters('billing', 0, 10);
    expect(all).toEqual(await local.listDeadLetters('billing', 0, 10));
    expect(all.messages.map((message) => message.messageId)).toEqual([1, 2, 3].map(messageId));
    expect(all.messages[0]).toMatchObject({
      topic: '%DLQ%billing',
      deadLetter: { group: 'billing', originTopic: 'orders', originOffset: 0, reason: 'poison' },
    });
    const page = await remote.listDeadLetters('billing', 1, 1);
    expect(page).toEqual(await local.listDeadLetters('billing', 1, 1));
    expect(page.cursor).toBe(2);

    expect(await remote.redrive('billing', { messageIds: [messageId(1)], ratePerSecond: 100 })).toEqual(
      await local.redrive('billing', { messageIds: [messageId(2)], ratePerSecond: 100 }),
    );
    expect(await remote.redrive('billing', { messageIds: [messageId(9)] })).toEqual({ accepted: 0 });
    await expect.poll(async () => (await remote.listDeadLetters('billing', 0, 10)).messages.length).toBe(1);
    expect(await remote.listDeadLetters('billing', 0, 10)).toEqual(
      await local.listDeadLetters('billing', 0, 10),
    );
    expect(await remote.redrive('billing', {})).toEqual({ accepted: 1 });
  });

  it('shows the heads of a FIFO group, as the queue does', async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    await remote.putTopic('ledger', { type: 'fifo' });
    await remote.putGroup('accounts', { fifo: true, startFrom: 'earliest' });
    await using client = await connect(owner.url);
    await client.request({
      type: 'send',
      messages: [1, 2, 3].map((n) => ({
        messageId: messageId(n),
        topic: 'ledger',
        body: new Uint8Array([n]),
        bornAt: 1,
        messageGroup: n === 3 ? 'customer-b' : 'customer-a',
      })),
    });
    const received = await client.request({
      type: 'receive',
      group: 'accounts',
      subscriptions: { ledger: '*' },
      maxMessages: 10,
      invisibleDurationMs: 30_000,
      awaitDurationMs: 0,
    });
    expect(received).toMatchObject({ type: 'messages', messages: [{}, {}] });

    const heads = await remote.fifoHeads('accounts', 10);
    expect(heads).toEqual(await local.fifoHeads('accounts', 10));
    expect(heads).toEqual([
      {
        topic: 'ledger',
        messageGroup: 'customer-a',
        offset: 0,
        messageId: messageId(1),
        state: 'inflight',
        deliveryAttempt: 1,
        retryAtMs: undefined,
      },
      expect.objectContaining({ messageGroup: 'customer-b', messageId: messageId(3) }),
    ]);
    expect(await remote.fifoHeads('accounts', 1)).toEqual(await local.fifoHeads('accounts', 1));
  });

  it("rejects with the owner's error, code and message as the queue's engine throws them", async () => {
    await using owner = await startOwner();
    const { local, remote } = owner;
    const remoteError = await rejectionOf(remote.listDeadLetters('nothing', 0, 10));
    const localError = await rejectionOf(
      Promise.resolve().then(() => local.listDeadLetters('nothing', 0, 10)),
    );
    expect(remoteError).toBeInstanceOf(BrokerError);
    expect(remoteError).toMatchObject({
      code: 404,
      errorName: 'NOT_FOUND',
      message: (localError as BrokerError).message,
      details: { group: 'nothing' },
    });
    expect(await rejectionOf(remote.fifoHeads('nothing', 10))).toMatchObject({ errorName: 'NOT_FOUND' });
    expect(await rejectionOf(remote.redrive('nothing', {}))).toMatchObject({ errorName: 'NOT_FOUND' });
    expect(await rejectionOf(remote.putTopic('no spaces', { type: 'normal' }))).toMatchObject({
      code: 400,
      errorName: 'BAD_REQUEST',
      message: expect.stringContaining('topic name'),
    });
  });
});
