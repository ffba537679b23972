// Apache's official RocketMQ 5 Node.js client, unchanged, against Ricochet's RocketMQ endpoint.
// Start the broker with it: pnpm start --grpc-port 8081. Run: pnpm example rocketmq-client
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';

const endpoints = process.env.RICOCHET_GRPC_ENDPOINT ?? '127.0.0.1:8081';
// The client writes its log to ~/logs/rocketmq unless given a logger; print only its errors.
const logger = { info() {}, warn() {}, debug() {}, error: (...args) => console.error(...args) };

// The consumer starts first: a new group reads from the end of the topic (startFrom: latest).
const consumer = new SimpleConsumer({
  endpoints,
  namespace: '',
  consumerGroup: 'rocketmq-example',
  subscriptions: new Map([['rocketmq-orders', '*']]),
  awaitDuration: 5_000,
  logger,
});
await consumer.startup();
const producer = new Producer({ endpoints, namespace: '', topics: ['rocketmq-orders'], logger });
await producer.startup();

const receipt = await producer.send({
  topic: 'rocketmq-orders',
  tag: 'created',
  keys: ['order-1042'],
  body: Buffer.from(JSON.stringify({ orderId: 1042 })),
});
console.log(`sent ${receipt.messageId} at offset ${receipt.offset}`);

// Leased for 30 s (the invisible duration): unacked, it would come back with deliveryAttempt 2.
const [message] = await consumer.receive(1, 30_000);
console.log(`received ${message.messageId}, tag ${message.tag}, deliveryAttempt ${message.deliveryAttempt}`);
console.log(`  body: ${message.body.toString()}`);
await consumer.ack(message);
console.log(`acked ${message.messageId}`);

await producer.shutdown();
await consumer.shutdown();
