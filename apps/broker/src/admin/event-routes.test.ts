import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { EventStream, MAX_BUFFERED_EVENTS } from './event-routes.js';

/** A response whose socket takes the first frame and then nothing more, or every frame. */
function response(takes: 'nothing' | 'everything'): { response: ServerResponse; written: string[] } {
  const written: string[] = [];
  const writable = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString());
      if (takes === 'everything') done();
    },
  });
  return { response: writable as unknown as ServerResponse, written };
}

const pause = (group: string) =>
  ({ type: 'group_paused', group, atMs: 0, cause: 'manual', why: 'paused by hand' }) as const;

describe('EventStream (X7)', () => {
  it('hands each listener the events it asked for, and drops one that stops taking them', async () => {
    const registry = new Registry();
    const stream = new EventStream({ registry });
    const stuck = response('nothing');
    const reader = response('everything');
    const billing = response('everything');
    stream.listen(stuck.response, { type: undefined, group: undefined, principal: undefined });
    stream.listen(reader.response, { type: undefined, group: undefined, principal: undefined });
    stream.listen(billing.response, { type: 'group_paused', group: 'billing', principal: undefined });

    // The stuck one takes its first frame and then waits: the rest queue, up to the bound, then it goes.
    for (let i = 0; i <= MAX_BUFFERED_EVENTS + 1; i++)
      stream.publish(pause(i === 0 ? 'billing' : 'shipping'));
    expect(reader.written).toHaveLength(MAX_BUFFERED_EVENTS + 2);
    expect(billing.written).toEqual([`event: group_paused\ndata: ${JSON.stringify(pause('billing'))}\n\n`]);
    expect(stuck.written).toHaveLength(1);
    expect((stuck.response as unknown as Writable).destroyed).toBe(true);
    expect(await registry.getSingleMetricAsString('ricochet_events_listeners_dropped_total')).toMatch(/ 1$/m);
    expect(await registry.getSingleMetricAsString('ricochet_events_listeners')).toMatch(/ 2$/m);
  });

  it('shows a principal only the groups it may read', () => {
    const stream = new EventStream({ registry: new Registry() });
    const listener = response('everything');
    stream.listen(listener.response, {
      type: undefined,
      group: undefined,
      principal: {
        name: 'billing-service',
        publish: [],
        consume: [{ group: 'billing', topics: ['*'] }],
        metrics: false,
      },
    } as never);
    stream.publish(pause('shipping'));
    stream.publish(pause('billing'));
    expect(listener.written.map((frame) => JSON.parse(frame.split('data: ')[1] ?? '').group)).toEqual([
      'billing',
    ]);
  });
});
