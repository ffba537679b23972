/** The event a {@link WebSocketLike} passes to `onmessage`. */
export interface WebSocketMessageEvent {
  /** `ArrayBuffer` (standard WebSocket, `binaryType = 'arraybuffer'`) or a Node `Buffer` (ws). */
  readonly data: unknown;
}

/** The event a {@link WebSocketLike} passes to `onclose`. */
export interface WebSocketCloseEvent {
  readonly code: number;
  readonly reason: string;
}

/** The event a {@link WebSocketLike} passes to `onerror`; ws adds the `Error`, browsers give nothing. */
export interface WebSocketErrorEvent {
  readonly error?: unknown;
  readonly message?: string;
}

/**
 * The part of the standard WebSocket API the client uses. Browsers, Deno, Bun, Node ≥ 22 and the
 * `ws` package all provide it. The handlers take `never` so that every implementation's own event
 * types fit; the client reads only the fields declared above.
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  /** The subprotocol the server selected; `''` when it selected none. */
  readonly protocol: string;
  onopen: ((event: never) => void) | null;
  onmessage: ((event: never) => void) | null;
  onclose: ((event: never) => void) | null;
  onerror: ((event: never) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: the standard one, `ws`'s, or a test double. */
export type WebSocketConstructor = new (url: string, protocols: string | string[]) => WebSocketLike;

/** The `readyState` of a closed socket in every implementation. */
export const WEB_SOCKET_CLOSED = 3;

/** A WebSocket implementation and the `binaryType` that avoids copies with it. */
export interface WebSocketImplementation {
  readonly create: WebSocketConstructor;
  readonly binaryType: 'arraybuffer' | 'nodebuffer';
}

/**
 * The runtime's WebSocket: `globalThis.WebSocket` where there is one (browsers, Deno, Bun,
 * Node ≥ 22), else the `ws` package. `ws` is imported dynamically so browser bundles never load it.
 */
export async function loadWebSocket(): Promise<WebSocketImplementation> {
  const native = (globalThis as { WebSocket?: unknown }).WebSocket;
  if (typeof native === 'function') {
    return { create: native as WebSocketConstructor, binaryType: 'arraybuffer' };
  }
  const { default: ws } = await importWs();
  // ws hands binary messages over as Buffers that view its receive buffer: no copy per message.
  return { create: ws, binaryType: 'nodebuffer' };
}

/**
 * The module name in a variable: a bundler then leaves it alone, so a browser bundle holds not even
 * `ws`'s browser stub, and Node loads it only where it has no WebSocket of its own.
 */
const WS_MODULE: string = 'ws';

/**
 * `ws`'s constructor as the client uses it: a URL, subprotocols, and (for TLS) its options. Typed
 * here rather than as `typeof import('ws')` so that the published declarations never name `ws`:
 * an app that type-checks its libraries (`skipLibCheck: false`) then needs no `@types/ws`.
 */
export type WsConstructor = new (
  url: string,
  protocols: string | string[],
  options?: Readonly<Record<string, unknown>>,
) => WebSocketLike;

/** The `ws` package, loaded on first use. */
export function importWs(): Promise<{ readonly default: WsConstructor }> {
  return import(WS_MODULE) as Promise<{ readonly default: WsConstructor }>;
}

/**
 * The bytes of a binary message, without copying: a `Uint8Array` (a Node `Buffer` included) as it
 * is, an `ArrayBuffer` viewed. `undefined` for anything else, such as a text message.
 */
export function messageBytes(data: unknown): Uint8Array | undefined {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return undefined;
}

/** Handlers that ignore everything, so a discarded socket's late events (ws emits `error` on close) go nowhere. */
export function detach(socket: WebSocketLike): void {
  const ignore = (): void => {};
  socket.onopen = ignore;
  socket.onmessage = ignore;
  socket.onclose = ignore;
  socket.onerror = ignore;
}

/**
 * Close `socket` and wait for its close event, at most `closeHandshakeTimeoutMs`: the socket is
 * closed either way, the limit only bounds how long the caller waits.
 */
export function closeSocket(
  socket: WebSocketLike,
  code: number,
  reason: string,
  closeHandshakeTimeoutMs: number,
): Promise<void> {
  detach(socket);
  if (socket.readyState === WEB_SOCKET_CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      // ws can cut the TCP connection without the closing handshake; standard sockets cannot.
      (socket as { terminate?: () => void }).terminate?.();
      resolve();
    }, closeHandshakeTimeoutMs);
    socket.onclose = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.close(code, reason);
  });
}

/** `: <why>` for a close message: the close reason, else what the error said, else nothing. */
export function describeCloseReason(reason: string, error: unknown): string {
  if (reason !== '') return `: ${reason}`;
  if (error instanceof Error) return `: ${error.message}`;
  if (typeof error === 'string' && error !== '') return `: ${error}`;
  return '';
}
