import { Packr } from 'msgpackr';
import WebSocket from 'ws';

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

type Answer = {
  t: string;
  id?: number;
  offset?: number;
  body?: Uint8Array;
  messages?: { offset: number; body: Uint8Array }[];
};

/** The reference's client: one WebSocket message per request, answers matched by id. */
export class ReferenceClient implements AsyncDisposable {
  readonly #socket: WebSocket;
  readonly #pending = new Map<number, (answer: Answer) => void>();
  #nextId = 1;
  onDeliver: (offset: number, body: Uint8Array) => void = () => {};

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.on('message', (data: Buffer) => {
      const answer = packr.unpack(data) as Answer;
      if (answer.t === 'deliver') {
        this.onDeliver(answer.offset ?? 0, answer.body ?? new Uint8Array());
        return;
      }
      const resolve = this.#pending.get(answer.id ?? -1);
      this.#pending.delete(answer.id ?? -1);
      resolve?.(answer);
    });
  }

  static async connect(url: string): Promise<ReferenceClient> {
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return new ReferenceClient(socket);
  }

  request(payload: Record<string, unknown>): Promise<Answer> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.#socket.send(packr.pack({ ...payload, id }));
    });
  }

  oneWay(payload: Record<string, unknown>): void {
    this.#socket.send(packr.pack(payload));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const closed = new Promise((resolve) => this.#socket.once('close', resolve));
    this.#socket.close();
    await closed;
  }
}
