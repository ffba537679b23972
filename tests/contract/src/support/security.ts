import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BrokerFrame,
  decodeBrokerFrame,
  encodeFrame,
  type Frame,
  PROTOCOL_VERSION,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
} from '@ricochet/protocol';
import WebSocket from 'ws';

/** A principal as the auth file spells it (DESIGN.md §7), without its token digest. */
export interface PrincipalGrant {
  readonly publish?: readonly string[];
  readonly consume?: readonly { readonly group: string; readonly topics: readonly string[] }[];
  readonly admin?: 'read' | 'write';
  readonly metrics?: boolean;
  readonly publishRatePerSecond?: number;
  /** RocketMQ 5 credentials, for Apache's clients over `--grpc-port`. */
  readonly rocketmq?: { readonly accessKey: string; readonly secretKey: string };
}

/**
 * An auth file in a temporary directory, with a fresh random token per principal. `write` replaces
 * the principals (new ones get new tokens), for reload tests; `await using` removes the directory.
 */
export class AuthFileFixture implements Disposable {
  readonly path: string;
  readonly #directory: string;
  readonly #tokens = new Map<string, string>();

  constructor(principals: Readonly<Record<string, PrincipalGrant>>) {
    this.#directory = mkdtempSync(join(tmpdir(), 'ricochet-auth-'));
    this.path = join(this.#directory, 'auth.json');
    this.write(principals);
  }

  /** The token of a principal this fixture wrote. */
  token(name: string): string {
    const token = this.#tokens.get(name);
    if (token === undefined) throw new Error(`no principal "${name}" in this auth file`);
    return token;
  }

  /** Write `principals` as the file's whole content. */
  write(principals: Readonly<Record<string, PrincipalGrant>>): void {
    const entries = Object.entries(principals).map(([name, grant]) => {
      const token = this.#tokens.get(name) ?? randomBytes(32).toString('base64url');
      this.#tokens.set(name, token);
      return { name, tokenSha256: createHash('sha256').update(token).digest('hex'), ...grant };
    });
    writeFileSync(this.path, JSON.stringify({ principals: entries }, null, 2));
  }

  /** Write text as it is: a broken file, for the refusal on reload. */
  writeRaw(text: string): void {
    writeFileSync(this.path, text);
  }

  [Symbol.dispose](): void {
    rmSync(this.#directory, { recursive: true, force: true });
  }
}

/** `Authorization: Bearer <token>` headers, or none. */
export function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/** An admin API request with a token; the raw response, for status checks. */
export function adminRequest(
  endpoint: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<Response> {
  const base = endpoint.replace(/^ws/, 'http');
  return fetch(`${base}${path}`, {
    method,
    headers: {
      ...bearer(options.token),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
}

/**
 * A WebSocket session opened with `hello` carrying `token` (or none), frames queued for `next()`,
 * and the close code once the broker closes it.
 */
export class TokenSocket implements AsyncDisposable {
  readonly closed: Promise<number>;
  readonly #socket: WebSocket;
  readonly #queue: BrokerFrame[] = [];
  readonly #waiting: ((frame: BrokerFrame) => void)[] = [];

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    this.closed = new Promise((resolve) => socket.once('close', (code) => resolve(code)));
    socket.on('message', (data: Buffer) => {
      const decoded = decodeBrokerFrame(data);
      if (!decoded.ok) throw new Error(`broker sent an undecodable frame: ${decoded.error.message}`);
      const waiter = this.#waiting.shift();
      if (waiter) waiter(decoded.frame);
      else this.#queue.push(decoded.frame);
    });
  }

  /** Connect and send `hello` with `token`; the broker's first answer is the next frame. */
  static async connect(endpoint: string, token: string | undefined): Promise<TokenSocket> {
    const socket = new WebSocket(`${endpoint}${WEBSOCKET_PATH}`, [WEBSOCKET_SUBPROTOCOL]);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const session = new TokenSocket(socket);
    session.send({
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      ...(token === undefined ? {} : { token }),
    });
    return session;
  }

  /** Connect with `token` and expect `welcome`. */
  static async open(endpoint: string, token: string): Promise<TokenSocket> {
    const session = await TokenSocket.connect(endpoint, token);
    const welcome = await session.next();
    if (welcome.type !== 'welcome') throw new Error(`expected welcome, got ${JSON.stringify(welcome)}`);
    return session;
  }

  send(frame: Frame | Record<string, unknown>): void {
    this.#socket.send(encodeFrame(frame as Frame));
  }

  next(): Promise<BrokerFrame> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#socket.readyState === WebSocket.CLOSED) return;
    this.#socket.close();
    await this.closed;
  }
}

/** The value of a Prometheus counter with these labels in `/metrics` text, or 0. */
export function counterValue(metricsText: string, name: string, labels: string): number {
  const line = metricsText.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}
