import type { Frame } from './schemas/frames.js';

const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f901';
const body = new Uint8Array([123, 34, 105, 100, 34, 58, 52, 50, 125]); // {"id":42}

/**
 * One realistic example of every frame type, in the key order a decoded frame has. The golden
 * test pins each to its exact bytes.
 */
export const GOLDEN_FRAMES: readonly {
  readonly name: string;
  readonly frame: Frame;
  readonly hex: string;
}[] = [
  {
    name: 'hello',
    frame: { type: 'hello', protocolVersion: 1, token: 's3cr3t', clientId: 'billing-worker-1' },
    hex: '84a474797065a568656c6c6faf70726f746f636f6c56657273696f6e01a5746f6b656ea6733363723374a8636c69656e744964b062696c6c696e672d776f726b65722d31',
  },
  {
    name: 'send',
    frame: {
      type: 'send',
      id: 1,
      messages: [
        {
          messageId,
          topic: 'orders',
          tag: 'created',
          keys: ['order-42'],
          messageGroup: 'customer-7',
          properties: { region: 'eu' },
          body,
          bornAt: 1763750000000,
          delayMs: 5000,
        },
      ],
    },
    hex: '83a474797065a473656e64a2696401a86d657373616765739189a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393031a5746f706963a66f7264657273a3746167a763726561746564a46b65797391a86f726465722d3432ac6d65737361676547726f7570aa637573746f6d65722d37aa70726f7065727469657381a6726567696f6ea26575a4626f6479c4097b226964223a34327da6626f726e4174cb4279aa7b13580000a764656c61794d73cd1388',
  },
  {
    name: 'register',
    frame: { type: 'register', id: 2, group: 'billing', subscriptions: { orders: 'created || paid' } },
    hex: '84a474797065a87265676973746572a2696402a567726f7570a762696c6c696e67ad737562736372697074696f6e7381a66f7264657273af63726561746564207c7c2070616964',
  },
  {
    name: 'subscribe',
    frame: {
      type: 'subscribe',
      id: 2,
      group: 'billing',
      subscriptions: { orders: 'created || paid' },
      maxCachedMessages: 1024,
    },
    hex: '85a474797065a9737562736372696265a2696402a567726f7570a762696c6c696e67ad737562736372697074696f6e7381a66f7264657273af63726561746564207c7c2070616964b16d61784361636865644d65737361676573cd0400',
  },
  {
    name: 'unsubscribe',
    frame: { type: 'unsubscribe', id: 3, subscriptionId: 1 },
    hex: '83a474797065ab756e737562736372696265a2696403ae737562736372697074696f6e496401',
  },
  {
    name: 'credit',
    frame: { type: 'credit', subscriptionId: 1, credits: 32 },
    hex: '83a474797065a6637265646974ae737562736372697074696f6e496401a76372656469747320',
  },
  {
    name: 'ack',
    frame: { type: 'ack', id: 4, receiptHandles: ['b1.7.2'] },
    hex: '83a474797065a361636ba2696404ae7265636569707448616e646c657391a662312e372e32',
  },
  {
    name: 'nack',
    frame: {
      type: 'nack',
      id: 5,
      items: [{ receiptHandle: 'b1.7.2', reason: 'payment service down', retryAfterMs: 200 }],
    },
    hex: '83a474797065a46e61636ba2696405a56974656d739183ad7265636569707448616e646c65a662312e372e32a6726561736f6eb47061796d656e74207365727669636520646f776eac726574727941667465724d73ccc8',
  },
  {
    name: 'release',
    frame: { type: 'release', id: 6, receiptHandles: ['b1.7.2'] },
    hex: '83a474797065a772656c65617365a2696406ae7265636569707448616e646c657391a662312e372e32',
  },
  {
    name: 'receive',
    frame: {
      type: 'receive',
      id: 7,
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 10,
      invisibleDurationMs: 30000,
      awaitDurationMs: 20000,
    },
    hex: '87a474797065a772656365697665a2696407a567726f7570a762696c6c696e67ad737562736372697074696f6e7381a66f7264657273a12aab6d61784d657373616765730ab3696e76697369626c654475726174696f6e4d73cd7530af61776169744475726174696f6e4d73cd4e20',
  },
  {
    name: 'changeInvisibleDuration',
    frame: { type: 'changeInvisibleDuration', id: 8, receiptHandle: 'b1.7.2', invisibleDurationMs: 60000 },
    hex: '84a474797065b76368616e6765496e76697369626c654475726174696f6ea2696408ad7265636569707448616e646c65a662312e372e32b3696e76697369626c654475726174696f6e4d73cdea60',
  },
  {
    name: 'welcome',
    frame: {
      type: 'welcome',
      protocolVersion: 1,
      sessionId: 's-5f2a',
      maxBodyBytes: 4194304,
      maxFrameBytes: 16777216,
    },
    hex: '85a474797065a777656c636f6d65af70726f746f636f6c56657273696f6e01a973657373696f6e4964a6732d35663261ac6d6178426f64794279746573ce00400000ad6d61784672616d654279746573ce01000000',
  },
  {
    name: 'sendResult',
    frame: {
      type: 'sendResult',
      id: 1,
      receipts: [
        { ok: true, messageId, offset: 41, duplicate: false },
        {
          ok: false,
          messageId: '019aa6b1f2c07d3e8a41b5c6d7e8f902',
          error: {
            code: 413,
            message: 'body is 5242880 bytes; the limit is 4194304',
            details: { limitBytes: 4194304 },
          },
        },
      ],
    },
    hex: '83a474797065aa73656e64526573756c74a2696401a872656365697074739284a26f6bc3a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393031a66f666673657429a96475706c6963617465c283a26f6bc2a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393032a56572726f7283a4636f6465cd019da76d657373616765d92b626f647920697320353234323838302062797465733b20746865206c696d69742069732034313934333034a764657461696c7381aa6c696d69744279746573ce00400000',
  },
  {
    name: 'subscribed',
    frame: { type: 'subscribed', id: 2, subscriptionId: 1 },
    hex: '83a474797065aa73756273637269626564a2696402ae737562736372697074696f6e496401',
  },
  {
    name: 'deliver',
    frame: {
      type: 'deliver',
      subscriptionId: 1,
      messages: [
        {
          messageId,
          topic: 'orders',
          tag: 'created',
          body,
          bornAt: 1763750000000,
          deliveryAttempt: 1,
          offset: 41,
          receiptHandle: 'b1.7.2',
        },
      ],
    },
    hex: '83a474797065a764656c69766572ae737562736372697074696f6e496401a86d657373616765739188a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393031a5746f706963a66f7264657273a3746167a763726561746564a4626f6479c4097b226964223a34327da6626f726e4174cb4279aa7b13580000af64656c6976657279417474656d707401a66f666673657429ad7265636569707448616e646c65a662312e372e32',
  },
  {
    name: 'creditWanted',
    frame: { type: 'creditWanted', subscriptionId: 7, ready: 12, late: true },
    hex: '84a474797065ac63726564697457616e746564ae737562736372697074696f6e496407a572656164790ca46c617465c3',
  },
  {
    name: 'creditReturned',
    frame: { type: 'creditReturned', subscriptionId: 7, credits: 20 },
    hex: '83a474797065ae63726564697452657475726e6564ae737562736372697074696f6e496407a76372656469747314',
  },
  {
    name: 'settled',
    frame: {
      type: 'settled',
      id: 4,
      failures: [{ index: 0, code: 410, message: 'the lease of b1.7.2 expired' }],
    },
    hex: '83a474797065a7736574746c6564a2696404a86661696c757265739183a5696e64657800a4636f6465cd019aa76d657373616765bb746865206c65617365206f662062312e372e322065787069726564',
  },
  {
    name: 'messages',
    frame: {
      type: 'messages',
      id: 7,
      messages: [
        {
          messageId,
          topic: '%DLQ%billing',
          body,
          bornAt: 1763750000000,
          deliveryAttempt: 1,
          offset: 0,
          receiptHandle: 'b9.1.1',
          deadLetter: {
            originTopic: 'orders',
            attempts: 17,
            reason: 'FAILURE',
            deadLetteredAt: 1763767200000,
          },
        },
      ],
    },
    hex: '83a474797065a86d65737361676573a2696407a86d657373616765739188a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393031a5746f706963ac25444c512562696c6c696e67a4626f6479c4097b226964223a34327da6626f726e4174cb4279aa7b13580000af64656c6976657279417474656d707401a66f666673657400ad7265636569707448616e646c65a662392e312e31aa646561644c657474657284ab6f726967696e546f706963a66f7264657273a8617474656d70747311a6726561736f6ea74641494c555245ae646561644c657474657265644174cb4279aa8b7a900000',
  },
  {
    name: 'invisibilityChanged',
    frame: { type: 'invisibilityChanged', id: 8, messageId, receiptHandle: 'b1.7.3' },
    hex: '84a474797065b3696e7669736962696c6974794368616e676564a2696408a96d6573736167654964d9203031396161366231663263303764336538613431623563366437653866393031ad7265636569707448616e646c65a662312e372e33',
  },
  {
    name: 'queueMap',
    frame: {
      type: 'queueMap',
      placement: 'fnv1a-group-or-id',
      queues: 4,
      broker: 'broker-a',
      owners: ['broker-a', 'broker-b', 'broker-b', null],
      endpoints: { 'broker-a': 'ws://10.0.0.1:7720', 'broker-b': 'ws://10.0.0.2:7720' },
    },
    hex: '86a474797065a871756575654d6170a9706c6163656d656e74b1666e7631612d67726f75702d6f722d6964a671756575657304a662726f6b6572a862726f6b65722d61a66f776e65727394a862726f6b65722d61a862726f6b65722d62a862726f6b65722d62c0a9656e64706f696e747382a862726f6b65722d61b277733a2f2f31302e302e302e313a37373230a862726f6b65722d62b277733a2f2f31302e302e302e323a37373230',
  },
  {
    name: 'adminCall',
    frame: { type: 'adminCall', id: 10, call: 'pauseGroup', args: ['billing', true] },
    hex: '84a474797065a961646d696e43616c6ca269640aa463616c6caa706175736547726f7570a46172677392a762696c6c696e67c3',
  },
  {
    name: 'adminAnswer',
    frame: { type: 'adminAnswer', id: 11, value: 52428800 },
    hex: '83a474797065ab61646d696e416e73776572a269640ba576616c7565ce03200000',
  },
  { name: 'ok', frame: { type: 'ok', id: 3 }, hex: '82a474797065a26f6ba2696403' },
  {
    name: 'error',
    frame: {
      type: 'error',
      id: 9,
      code: 404,
      message: 'topic "payments" does not exist',
      details: { topic: 'payments' },
    },
    hex: '85a474797065a56572726f72a2696409a4636f6465cd0194a76d657373616765bf746f70696320227061796d656e74732220646f6573206e6f74206578697374a764657461696c7381a5746f706963a87061796d656e7473',
  },
];
