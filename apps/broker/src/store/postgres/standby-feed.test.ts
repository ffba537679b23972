import { EventEmitter } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  encodeFeedFrame,
  FeedFrameReader,
  FeedHub,
  followFeed,
  MAX_UNREAD_FEED_BYTES,
} from './standby-feed.js';
import type { CommittedWrites } from './write-pipeline.js';

const BATCH: CommittedWrites = {
  from: 7,
  to: 9,
  expired: [{ topic: 'orders', offset: 0, messageId: 'm0' }],
  messages: [Uint8Array.of(1, 2, 3)],
  history: [['m1', Uint8Array.of(4, 5)]],
};

/** What the hub uses of a route's response, with what was written to it. */
class FakeResponse extends EventEmitter {
  readonly written: Buffer[] = [];
  writableLength = 0;
  ended = false;
  destroyed = false;
  write(chunk: Buffer): boolean {
    this.written.push(chunk);
    return true;
  }
  end(): void {
    this.ended = true;
    this.emit('close');
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

function follower(hub: FeedHub, queue: number): FakeResponse {
  const response = new FakeResponse();
  hub.follow(queue, response as unknown as ServerResponse);
  return response;
}

describe("the standbys' feed", () => {
  it('reads back the batches it framed, however the bytes are cut', () => {
    const second = { ...BATCH, from: 9, to: 9, expired: [], history: [] };
    const bytes = Buffer.concat([encodeFeedFrame(BATCH), encodeFeedFrame(second)]);
    for (const cut of [1, 3, 4, 5, 20, bytes.length - 1]) {
      const reader = new FeedFrameReader();
      const read = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))];
      expect(read).toEqual([
        { ...BATCH, messages: [Buffer.of(1, 2, 3)], history: [['m1', Buffer.of(4, 5)]] },
        { ...second, messages: [Buffer.of(1, 2, 3)] },
      ]);
    }
    // A frame that holds no batch is refused: the standby then reads from the database.
    const notABatch = Buffer.from([0, 0, 0, 1, 0xc0]);
    expect(() => new FeedFrameReader().push(notABatch)).toThrow('not a batch');
  });

  it("sends a queue's batches to that queue's followers only, and cuts one that leaves too much unread", () => {
    const hub = new FeedHub();
    expect(hub.followed(0)).toBe(false);
    const first = follower(hub, 0);
    const slow = follower(hub, 0);
    const other = follower(hub, 1);
    expect(hub.followed(0)).toBe(true);
    hub.publish(0, BATCH);
    expect(first.written).toEqual([encodeFeedFrame(BATCH)]);
    expect(other.written).toEqual([]);
    slow.writableLength = MAX_UNREAD_FEED_BYTES + 1;
    hub.publish(0, BATCH);
    expect(slow.destroyed).toBe(true);
    expect(slow.written).toHaveLength(1);
    expect(first.written).toHaveLength(2);
    // Cut, it is no longer followed by it.
    hub.publish(0, BATCH);
    expect(slow.written).toHaveLength(1);
  });

  it('ends the streams of a queue no longer owned, and every stream when the broker closes', () => {
    const hub = new FeedHub();
    const onFirst = follower(hub, 0);
    const onSecond = follower(hub, 1);
    hub.unfollowAll(0);
    expect(onFirst.ended).toBe(true);
    expect(hub.followed(0)).toBe(false);
    expect(onSecond.ended).toBe(false);
    hub.end();
    expect(onSecond.ended).toBe(true);
    // The HTTP server waits for its responses: none is kept open from then on.
    expect(follower(hub, 1).ended).toBe(true);
    expect(hub.followed(1)).toBe(false);
  });

  it('asks the new owner at once when told of one, and asks again after a stream ends', async () => {
    // Each owner answers its feed's requests with 200 and ends the stream at once: a standby asks
    // again a second later.
    const asked: string[] = [];
    const owner = async (name: string) => {
      const server = createServer((request, response) => {
        asked.push(`${name} ${request.headers['ricochet-queue']} ${request.headers.authorization}`);
        response.writeHead(200).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return { server, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}` };
    };
    const [first, second] = [await owner('first'), await owner('second')];
    let askedTwice!: () => void;
    const twice = new Promise<void>((resolve) => {
      askedTwice = resolve;
    });
    const following = followFeed(
      3,
      {
        requestHeaders: (queue) => ({ authorization: 'Bearer secret', 'ricochet-queue': String(queue) }),
        hub: new FeedHub(),
      },
      {
        batch: async () => 'applied',
        connected: () => {
          if (asked.filter((line) => line.startsWith('second')).length === 2) askedTwice();
        },
      },
    );
    try {
      following.ownerAt(first.url);
      following.ownerAt(second.url);
      await twice;
      expect(asked.filter((line) => line.startsWith('second'))).toEqual([
        'second 3 Bearer secret',
        'second 3 Bearer secret',
      ]);
      // Not asked again after the owner moved on.
      expect(asked.filter((line) => line.startsWith('first')).length).toBeLessThanOrEqual(1);
    } finally {
      following.stop();
      for (const { server } of [first, second]) server.close();
    }
  });
});
