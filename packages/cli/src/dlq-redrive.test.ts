import { setTimeout as sleep } from 'node:timers/promises';
import type { DeadLetterEntry, MessageView } from '@ricochet/protocol';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliTestBroker, cli, startCliTestBroker } from './cli-run.fixture.js';
import { EXIT_CODES } from './exit-codes.js';

let broker: CliTestBroker;
let endpoint: string[];
/** While true, the consumer fails every delivery: with maxRetries 0, each goes to the DLQ at once. */
let warehouseDown = true;
const committed: string[] = [];
let consumer: PushConsumer;

beforeAll(async () => {
  broker = await startCliTestBroker();
  endpoint = ['--endpoint', broker.httpUrl];
  // Full history: the timelines below show the redriven message's success too.
  const set = await cli(['groups', 'set', 'shipping', 'maxRetries=0', 'history=full', ...endpoint]);
  expect(set.code).toBe(EXIT_CODES.OK);
  consumer = new PushConsumer({
    endpoint: broker.webSocketUrl,
    group: 'shipping',
    subscriptions: { shipments: '*' },
    listener: (message) => {
      if (warehouseDown) return ConsumeResult.FAILURE;
      committed.push(message.messageId);
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();
});
afterAll(async () => {
  await consumer.close();
  await broker[Symbol.asyncDispose]();
});

async function send(body: string): Promise<string> {
  const run = await cli(['send', 'shipments', '--tag', 'parcel', '--body', body, '--json', ...endpoint]);
  expect(run.code).toBe(EXIT_CODES.OK);
  return (JSON.parse(run.stdout) as { messageId: string }).messageId;
}

/** Poll `dlq ls --json` (bounded) until it holds every id in `ids`. */
async function untilInDlq(ids: readonly string[]): Promise<DeadLetterEntry[]> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const entries = JSON.parse(
      (await cli(['dlq', 'ls', 'shipping', '--json', ...endpoint])).stdout,
    ) as DeadLetterEntry[];
    if (ids.every((id) => entries.some((entry) => entry.messageId === id))) return entries;
    await sleep(50);
  }
  throw new Error(`not all of ${ids.join(', ')} reached the DLQ`);
}

/** Poll `messages get --json` (bounded) until the message is in `state` for the group. */
async function untilMessageState(id: string, state: string): Promise<MessageView> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const view = JSON.parse(
      (await cli(['messages', 'get', id, '--json', ...endpoint])).stdout,
    ) as MessageView;
    if (view.groups[0]?.state === state) return view;
    await sleep(50);
  }
  throw new Error(`message ${id} never reached ${state}`);
}

async function untilCommitted(ids: readonly string[]): Promise<void> {
  for (let attempt = 0; attempt < 200 && !ids.every((id) => committed.includes(id)); attempt++)
    await sleep(50);
  expect(committed).toEqual(expect.arrayContaining([...ids]));
}

describe('ricochet dlq and messages', () => {
  it('lists and shows dead-lettered messages, shows their timeline, and redrives them all with a progress bar', async () => {
    const ids = [await send('{"parcel":1}'), await send('{"parcel":2}'), await send('{"parcel":3}')];
    await untilInDlq(ids);

    const ls = await cli(['dlq', 'ls', 'shipping', ...endpoint]);
    expect(ls.stdout).toMatch(/^MESSAGE-ID\s+ORIGIN-TOPIC\s+ATTEMPTS\s+CAUSE\s+DEAD-LETTERED\s+REASON$/m);
    for (const id of ids)
      expect(ls.stdout).toMatch(new RegExp(`^${id}\\s+shipments\\s+1\\s+maxRetries\\s+\\S+Z\\s+\\S`, 'm'));

    const show = await cli(['dlq', 'show', 'shipping', ids[1] ?? '', ...endpoint]);
    expect(show.code).toBe(EXIT_CODES.OK);
    expect(show.stdout).toMatch(/^origin:\s+shipments offset 1$/m);
    expect(show.stdout).toMatch(/^tag:\s+parcel$/m);
    expect(show.stdout).toMatch(/^cause:\s+maxRetries$/m);
    expect(show.stdout).toMatch(/^first failed:\s+\S+Z$/m);
    expect(show.stdout).toContain('"parcel": 2');

    const history = await cli(['messages', 'get', ids[0] ?? '', ...endpoint]);
    expect(history.stdout).toMatch(/^topic:\s+shipments offset 0$/m);
    expect(history.stdout).toMatch(/^group shipping: dlq$/m);
    expect(history.stdout).toMatch(/^ {2}ATTEMPT\s+DELIVERED\s+CONSUMER\s+TOOK\s+RESULT\s+REASON$/m);
    expect(history.stdout).toMatch(/^ {2}#1\s+\S+Z\s+push( \S+)?\s+\d+(ms|s)\s+deadLettered\s+\S/m);

    warehouseDown = false;
    // 2 a second: the redrive takes about a second, and the bar is drawn as it goes.
    const redrive = await cli(['dlq', 'redrive', 'shipping', '--all', '--rate', '2', ...endpoint], {
      stderrIsTTY: true,
    });
    expect(redrive.code).toBe(EXIT_CODES.OK);
    expect(redrive.stdout).toContain(
      'redriving 3 message(s) of %DLQ%shipping back to their topics, at most 2/s',
    );
    expect(redrive.stdout).toContain('redriven 3 message(s): group shipping receives them again');
    const frames = redrive.stderr.split('\r').filter((frame) => frame !== '');
    expect(frames[0]).toMatch(/^redrive \[-+\] 0\/3 {3}0%/);
    expect(frames.at(-1)).toMatch(/^redrive \[#+\] 3\/3 100%\n$/);
    expect(frames.length).toBeGreaterThanOrEqual(2);
    await untilCommitted(ids);

    const empty = await cli(['dlq', 'ls', 'shipping', ...endpoint]);
    expect(empty.stdout).toBe('the DLQ of group shipping is empty\n');
    await untilMessageState(ids[0] ?? '', 'committed');
    const after = await cli(['messages', 'get', ids[0] ?? '', ...endpoint]);
    expect(after.stdout).toMatch(/^group shipping: committed$/m);
    expect(after.stdout).toMatch(/^ {2}#1\s+\S+Z\s+push( \S+)?\s+\S+\s+committed\s*$/m);
  });

  it('redrives by id with plain progress lines off a terminal, and exits 2 for an id not in the DLQ', async () => {
    warehouseDown = true;
    const id = await send('{"parcel":4}');
    await untilInDlq([id]);
    warehouseDown = false;
    const missing = '0'.repeat(32);
    const run = await cli(['dlq', 'redrive', 'shipping', id, missing, ...endpoint]);
    expect(run.stderr).toContain('redrive: 0/1\n');
    expect(run.stderr).toContain('redrive: 1/1\n');
    expect(run.stderr).not.toContain('\r');
    expect(run.stderr).toContain(`error: not in the DLQ of group shipping: ${missing}`);
    expect(run.code).toBe(EXIT_CODES.NOT_FOUND);
    await untilCommitted([id]);
  });

  it('answers --json with one parsable document', async () => {
    warehouseDown = true;
    const id = await send('{"parcel":5}');
    await untilInDlq([id]);
    warehouseDown = false;
    const run = await cli(['dlq', 'redrive', 'shipping', '--all', '--json', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.OK);
    expect(JSON.parse(run.stdout)).toEqual({ group: 'shipping', accepted: 1, redriven: 1, notFound: [] });
    await untilCommitted([id]);
    const message = await untilMessageState(id, 'committed');
    expect(message.message).toMatchObject({ messageId: id, topic: 'shipments', tag: 'parcel' });
    expect(message.groups[0]?.history.map((entry) => entry.result)).toEqual(['deadLettered', 'committed']);
  });

  it('exits 2 for an unknown message or group, 1 for a malformed id', async () => {
    const unknown = await cli(['messages', 'get', 'f'.repeat(32), ...endpoint]);
    expect(unknown.code).toBe(EXIT_CODES.NOT_FOUND);
    expect((await cli(['dlq', 'ls', 'no-such-group', ...endpoint])).code).toBe(EXIT_CODES.NOT_FOUND);
    expect((await cli(['messages', 'get', 'not an id', ...endpoint])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['dlq', 'redrive', 'shipping', ...endpoint])).code).toBe(EXIT_CODES.USAGE);
  });
});
