// The producer and the simple consumer in a web page. Build: pnpm --filter @ricochet/example-browser build
import { Producer } from '@ricochet/producer';
import { SimpleConsumer } from '@ricochet/simple-consumer';

const $ = (id) => document.getElementById(id);
const log = (text) => {
  const item = document.createElement('li');
  item.textContent = text;
  $('log').append(item);
};

// `?endpoint=ws://host:port` fills the endpoint field, for links and tests.
const fromQuery = new URLSearchParams(location.search).get('endpoint');
if (fromQuery) $('endpoint').value = fromQuery;

let producer;
let consumer;

$('connect').addEventListener('click', async () => {
  const endpoint = $('endpoint').value;
  $('connect').disabled = true;
  try {
    // A new group starts at the topic's end: start the consumer before anything is sent.
    consumer = new SimpleConsumer({
      endpoint,
      group: 'browser',
      subscriptions: { orders: '*' },
      awaitDurationMs: 10_000,
    });
    producer = new Producer({ endpoint });
    await consumer.start();
    await producer.start();
    log(`connected to ${endpoint}`);
    $('send').disabled = false;
    $('receive').disabled = false;
  } catch (error) {
    log(`cannot connect: ${error.message}`);
    $('connect').disabled = false;
  }
});

$('send').addEventListener('click', async () => {
  try {
    const { messageId, offset } = await producer.send({
      topic: 'orders',
      body: $('body').value,
      tag: 'created',
    });
    log(`sent ${messageId} at offset ${offset}`);
  } catch (error) {
    log(`send failed: ${error.message}`);
  }
});

$('receive').addEventListener('click', async () => {
  try {
    // Lease up to 10 messages for 30 s; with none ready the broker holds the call up to 10 s.
    const messages = await consumer.receive(10, 30_000);
    if (messages.length === 0) log('no message arrived within 10 s');
    for (const message of messages) {
      log(`received ${message.messageId}: ${message.text()}`);
      await consumer.ack(message);
      log(`acked ${message.messageId}`);
    }
  } catch (error) {
    log(`receive failed: ${error.message}`);
  }
});

addEventListener('pagehide', () => {
  producer?.close();
  consumer?.close();
});
