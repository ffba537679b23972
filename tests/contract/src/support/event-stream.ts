import { type BrokerEvent, brokerEventSchema } from '@ricochet/protocol';
import { bearer } from './security.js';

/**
 * A listener of `GET /v1/events` over real HTTP: it reads the server-sent events as they come,
 * checks each against the protocol's schema, and lets a test await an event as it arrives.
 */
export class EventListener implements AsyncDisposable {
  readonly events: BrokerEvent[] = [];
  readonly #abort = new AbortController();
  readonly #waiters: { holds: (event: BrokerEvent) => boolean; resolve: (event: BrokerEvent) => void }[] = [];
  #reading: Promise<void> = Promise.resolve();

  /** Open the stream; resolves once the broker has answered 200 and sent its opening comment. */
  static async open(
    endpoint: string,
    query: Readonly<Record<string, string>> = {},
    token?: string,
  ): Promise<EventListener> {
    const listener = new EventListener();
    const url = new URL(`${endpoint.replace(/^ws/, 'http')}/v1/events`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const response = await fetch(url, { headers: bearer(token), signal: listener.#abort.signal });
    if (response.status !== 200 || !response.body)
      throw new Error(`GET /v1/events answered ${response.status}`);
    if (!response.headers.get('content-type')?.startsWith('text/event-stream'))
      throw new Error(`GET /v1/events answered ${response.headers.get('content-type')}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    if (!first.value?.startsWith(':')) throw new Error('the stream did not open with a comment');
    listener.#reading = listener.#read(reader, first.value.slice(first.value.indexOf('\n\n') + 2));
    return listener;
  }

  /** The first event (already seen or still to come) for which `holds` is true. */
  next(holds: (event: BrokerEvent) => boolean, timeoutMs = 10_000): Promise<BrokerEvent> {
    const seen = this.events.find(holds);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such event within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push({
        holds,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      });
    });
  }

  async #read(reader: ReadableStreamDefaultReader<string>, start: string): Promise<void> {
    let buffered = start;
    for (;;) {
      let end = buffered.indexOf('\n\n');
      while (end >= 0) {
        this.#take(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
        end = buffered.indexOf('\n\n');
      }
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffered += value;
    }
  }

  #take(frame: string): void {
    const lines = frame.split('\n');
    const type = lines.find((line) => line.startsWith('event: '))?.slice(7);
    const data = lines.find((line) => line.startsWith('data: '))?.slice(6);
    if (data === undefined) return;
    const event = brokerEventSchema.parse(JSON.parse(data));
    if (event.type !== type) throw new Error(`event line ${type} for data of type ${event.type}`);
    this.events.push(event);
    for (const waiter of this.#waiters.filter((w) => w.holds(event))) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(event);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#abort.abort();
    await this.#reading;
  }
}
