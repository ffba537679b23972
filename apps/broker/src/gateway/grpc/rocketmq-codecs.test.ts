import type { MethodDefinition } from '@grpc/proto-loader';
import { describe, expect, it } from 'vitest';
import { frameMessage } from './grpc-framing.js';
import { rocketServiceDefinition } from './rocketmq-codecs.js';
import { messagingServiceDefinition } from './rocketmq-schema.js';
import { OK_STATUS, status } from './rocketmq-status.js';

/**
 * The gateway's own codecs of the hot RPCs against proto-loader's generic ones (the codec they
 * replace, over the same schema): a request the generic encoder writes decodes to what the generic
 * decoder reads, and an answer ours encodes reads back, through the generic decoder, as the generic
 * encoder's own bytes do.
 */

type Method = MethodDefinition<object, object>;
const generic = messagingServiceDefinition() as unknown as Record<string, Method>;
const ours = rocketServiceDefinition() as unknown as Record<string, Method>;

function method(definition: Record<string, Method>, name: string): Method {
  const found = definition[name];
  if (found === undefined) throw new Error(`no ${name}`);
  return found;
}

/** Generic encode, then each decoder: the two must read the same. */
function decodedBoth(name: string, request: object): { ours: object; generic: object } {
  const bytes = method(generic, name).requestSerialize(request);
  return {
    ours: method(ours, name).requestDeserialize(bytes),
    generic: method(generic, name).requestDeserialize(bytes),
  };
}

/**
 * Each encoder, then the generic decoder: the two must read the same. Ours as the server writes
 * it, a whole gRPC message, must be the same bytes behind the prefix.
 */
function answeredBoth(name: string, answer: object): { ours: object; generic: object } {
  const read = (bytes: Buffer) => method(generic, name).responseDeserialize(bytes);
  const framed = (ours[name] as Method & { responseFrame(value: object): Buffer }).responseFrame(answer);
  const bare = method(ours, name).responseSerialize(answer);
  expect(framed).toEqual(frameMessage(bare));
  return {
    ours: read(method(ours, name).responseSerialize(answer)),
    generic: read(method(generic, name).responseSerialize(answer)),
  };
}

const timestamp = { seconds: 1_764_400_000, nanos: 123_000_000 };

describe("the gateway's codecs of the hot RPCs", () => {
  it('decode SendMessage as the generic codec does, every field a handler reads', () => {
    const request = {
      messages: [
        {
          topic: { resourceNamespace: 'ns', name: 'orders' },
          userProperties: { region: 'eu', empty: '' },
          systemProperties: {
            tag: 'paid',
            keys: ['k1', 'k2'],
            messageId: '0123456789ABCDEF',
            bodyDigest: { type: 'MD5', checksum: 'ignored by the handlers' },
            bodyEncoding: 'GZIP',
            messageType: 'DELAY',
            bornTimestamp: timestamp,
            bornHost: 'host',
            deliveryTimestamp: { seconds: 1_764_400_060, nanos: 0 },
            queueId: 0,
            messageGroup: 'g1',
          },
          body: Buffer.from('hello'),
        },
        { topic: { name: 'bare' }, systemProperties: { messageId: 'x' }, body: Buffer.alloc(0) },
      ],
    };
    const both = decodedBoth('SendMessage', request);
    const read = (decoded: object) => {
      const messages = (decoded as { messages: Record<string, unknown>[] }).messages;
      return messages.map(({ systemProperties, body, ...rest }) => {
        const system = systemProperties as Record<string, unknown>;
        return {
          ...rest,
          body: Buffer.from(body as Uint8Array).toString('hex'),
          // The fields outgoingOf reads; the rest the decoder skips by design.
          systemProperties: {
            tag: system.tag,
            keys: system.keys,
            messageId: system.messageId,
            bodyEncoding: system.bodyEncoding,
            messageType: system.messageType,
            bornTimestamp: system.bornTimestamp,
            deliveryTimestamp: system.deliveryTimestamp,
            messageGroup: system.messageGroup,
          },
        };
      });
    };
    expect(read(both.ours)).toEqual(read(both.generic));
    expect(read(both.ours)[0]?.systemProperties.messageType).toBe('DELAY');
  });

  it('decode ReceiveMessage and AckMessage as the generic codec does', () => {
    const receive = decodedBoth('ReceiveMessage', {
      group: { name: 'billing' },
      messageQueue: { topic: { name: 'orders' }, id: 0, permission: 'READ_WRITE' },
      filterExpression: { type: 'SQL', expression: 'a > 1' },
      batchSize: 32,
      invisibleDuration: { seconds: 30 },
      autoRenew: true,
      longPollingTimeout: { seconds: 20, nanos: 5 },
      attemptId: 'skipped',
    });
    const { attemptId: _skipped, messageQueue, ...rest } = receive.generic as Record<string, unknown>;
    const queue = messageQueue as { topic: unknown };
    // proto-loader's virtual `_name` fields (which proto3 `optional` oneof is set) no handler reads.
    const read = Object.fromEntries(Object.entries(rest).filter(([key]) => !key.startsWith('_')));
    expect(receive.ours).toEqual({ ...read, messageQueue: { topic: queue.topic } });
    const ack = decodedBoth('AckMessage', {
      group: { name: 'billing' },
      topic: { name: 'orders' },
      entries: [{ messageId: 'm1', receiptHandle: 'h1' }, { receiptHandle: 'h2' }],
    });
    expect(ack.ours).toEqual(ack.generic);
  });

  it('refuse bytes that are not a message, as the generic codec does (the server answers INTERNAL)', () => {
    const broken = Buffer.from([0x0a, 0xff, 0xff, 0xff]);
    for (const name of ['SendMessage', 'ReceiveMessage', 'AckMessage']) {
      expect(() => method(generic, name).requestDeserialize(broken)).toThrow();
      expect(() => method(ours, name).requestDeserialize(broken)).toThrow();
    }
  });

  it('encode SendMessage and AckMessage answers that read back as the generic ones', () => {
    const send = answeredBoth('SendMessage', {
      status: status('MULTIPLE_RESULTS', 'the entries have different results'),
      entries: [
        { status: OK_STATUS, messageId: 'm1', transactionId: 'm1', offset: 0 },
        { status: status('TOPIC_NOT_FOUND', 'no such topic'), messageId: 'm2', transactionId: '', offset: 0 },
        { status: OK_STATUS, messageId: 'm3', transactionId: 'm3', offset: 2 ** 40 },
      ],
    });
    expect(send.ours).toEqual(send.generic);
    expect(answeredBoth('SendMessage', { status: status('UNAUTHORIZED', 'no') })).toEqual({
      ours: { status: { code: 'UNAUTHORIZED', message: 'no' } },
      generic: { status: { code: 'UNAUTHORIZED', message: 'no' } },
    });
    const ack = answeredBoth('AckMessage', {
      status: OK_STATUS,
      entries: [{ messageId: 'm1', receiptHandle: 'h1', status: OK_STATUS }],
    });
    expect(ack.ours).toEqual(ack.generic);
  });

  it("encode each ReceiveMessage frame that reads back as the generic one's", () => {
    const message = {
      topic: { name: 'orders' },
      userProperties: { region: 'eu' },
      systemProperties: {
        tag: 'paid',
        keys: ['k1'],
        messageId: 'm1',
        bodyDigest: { type: 'MD5', checksum: '5D41402ABC4B2A76B9719D911017C592' },
        bodyEncoding: 'IDENTITY',
        messageType: 'FIFO',
        bornTimestamp: timestamp,
        bornHost: '',
        storeHost: 'ricochet',
        receiptHandle: 'handle',
        queueId: 0,
        queueOffset: 7,
        invisibleDuration: { seconds: 30, nanos: 0 },
        deliveryAttempt: 2,
        messageGroup: 'g1',
        deadLetterQueue: { topic: 'orders', messageId: 'm1' },
      },
      body: Buffer.from('hello'),
    };
    for (const frame of [
      { status: OK_STATUS },
      { status: status('MESSAGE_NOT_FOUND', 'no message to receive') },
      { message },
      // Lengths past one varint byte, at every level: the writer moves an embedded message right.
      {
        message: {
          ...message,
          userProperties: { region: 'eu', note: 'n'.repeat(300) },
          systemProperties: { ...message.systemProperties, keys: ['k'.repeat(200)] },
          body: Buffer.alloc(20_000, 7),
        },
      },
      // Strings past ASCII, short (a break from the writer's ASCII copy) and long (none tried).
      {
        message: {
          ...message,
          userProperties: { région: 'café ☕', long: `${'é'.repeat(200)}😀` },
          systemProperties: { ...message.systemProperties, tag: 'payé', keys: ['clé', 'a'.repeat(127)] },
        },
      },
      { deliveryTimestamp: timestamp },
    ]) {
      const both = answeredBoth('ReceiveMessage', frame);
      expect(both.ours).toEqual(both.generic);
    }
  });
});
