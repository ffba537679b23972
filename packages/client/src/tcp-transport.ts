import type { Socket } from 'node:net';
import {
  encodeStreamClose,
  StreamFrameReader,
  type StreamRecord,
  streamFramePrefix,
} from '@ricochet/protocol';
import { badRequestError } from './client-error.js';
import { LinkEvents } from './link-events.js';
import { openingFailure } from './link-failure.js';
import type { TlsOptions } from './tls-options.js';
import type { FrameLink, LinkConnectOptions, LinkListener, Transport } from './transport.js';

/**
 * The module names, in variables: a bundler then leaves them alone, so a browser bundle holds no
 * `net` or `tls`, and the modules load only when a `tcp://` or `tls://` endpoint is used.
 */
const NODE_NET: string = 'node:net';
const NODE_TLS: string = 'node:tls';

/** The close code of a link that ended without a close record (RFC 6455's "abnormal closure"). */
const ABNORMAL_CLOSURE = 1006;

/**
 * The largest frame the client reads from a stream. The broker's frames are bounded by what it
 * stores (a `messages` frame of large bodies), not by `maxFrameBytes`, which limits what it reads;
 * this is a guard against a peer that is not a broker, not a protocol limit.
 */
const MAX_INCOMING_FRAME_BYTES = 1024 * 1024 * 1024;

/**
 * `tcp://` and `tls://` (Node only): each frame is a 4-byte big-endian length and then the frame's
 * bytes, on a plain TCP connection or one with TLS; closing is the stream's close record.
 * @see docs/protocol/transports.md
 */
export class TcpTransport implements Transport {
  readonly name = 'tcp';
  readonly stream = true;
  readonly address: string;
  readonly maxFrameBytes = MAX_INCOMING_FRAME_BYTES;
  readonly #host: string;
  readonly #port: number;
  readonly #secure: boolean;
  readonly #tls: TlsOptions | undefined;

  /**
   * @param endpoint - a `tcp:` or `tls:` URL with a port.
   * @throws ClientError `400` when the URL has no port or a path.
   */
  constructor(endpoint: URL, tls: TlsOptions | undefined) {
    if (endpoint.port === '') {
      throw badRequestError(`endpoint '${endpoint.href}' needs a port, e.g. tcp://host:7721`);
    }
    if (endpoint.pathname !== '' && endpoint.pathname !== '/') {
      throw badRequestError(`endpoint '${endpoint.href}' takes no path: frames go to the port itself`);
    }
    this.#secure = endpoint.protocol === 'tls:';
    // URL keeps the brackets of an IPv6 host; sockets take the address without them.
    this.#host = endpoint.hostname.replace(/^\[(.*)\]$/, '$1');
    this.#port = Number(endpoint.port);
    this.#tls = tls;
    this.address = `${endpoint.protocol}//${endpoint.host}`;
  }

  async connect(options: LinkConnectOptions): Promise<FrameLink> {
    const { signal } = options;
    const socket = await this.#open();
    if (signal.aborted) {
      socket.destroy();
      throw signal.reason;
    }
    return new Promise<FrameLink>((resolve, reject) => {
      const connectedEvent = this.#secure ? 'secureConnect' : 'connect';
      const fail = (error: unknown): void => {
        signal.removeEventListener('abort', onAbort);
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.destroy();
        reject(error);
      };
      const onAbort = (): void => fail(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      socket.once('error', (error) => {
        fail(openingFailure(this.address, `cannot connect to ${this.address}: ${error.message}`, error));
      });
      socket.once('close', () =>
        fail(openingFailure(this.address, `the connection to ${this.address} closed`, undefined)),
      );
      socket.once(connectedEvent, () => {
        signal.removeEventListener('abort', onAbort);
        socket.removeAllListeners();
        resolve(new StreamLink(socket));
      });
    });
  }

  async #open(): Promise<Socket> {
    if (!this.#secure) {
      const net = (await import(NODE_NET)) as typeof import('node:net');
      return net.connect({ host: this.#host, port: this.#port, noDelay: true });
    }
    const tls = (await import(NODE_TLS)) as typeof import('node:tls');
    const settings = this.#tls ?? {};
    const ca = Array.isArray(settings.ca) ? [...settings.ca] : settings.ca;
    return tls.connect({
      host: this.#host,
      port: this.#port,
      noDelay: true,
      ...settings,
      ...(ca === undefined ? {} : { ca }),
      ...(settings.servername === undefined && !isIpAddress(this.#host) ? { servername: this.#host } : {}),
    } as import('node:tls').ConnectionOptions);
  }
}

/** Whether `host` is an IP address: TLS sends no server name for those (RFC 6066 §3). */
function isIpAddress(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** A connected TCP (or TLS) socket as a {@link FrameLink}. */
class StreamLink implements FrameLink {
  readonly stream = true;
  readonly #socket: Socket;
  readonly #events = new LinkEvents();
  readonly #reader = new StreamFrameReader(MAX_INCOMING_FRAME_BYTES);
  /** The close record the broker sent, told when the socket has closed. */
  #closeRecord: { code: number; reason: string } | undefined;
  #socketError: unknown;

  constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      for (const record of this.#reader.push(chunk)) this.#take(record);
    });
    socket.on('error', (error) => {
      this.#socketError = error;
    });
    socket.on('close', () => {
      const record = this.#closeRecord;
      this.#events.close({
        code: record?.code ?? ABNORMAL_CLOSURE,
        reason: record?.reason ?? '',
        ...(this.#socketError === undefined ? {} : { error: this.#socketError }),
      });
    });
  }

  #take(record: StreamRecord): void {
    switch (record.type) {
      case 'frame':
        this.#events.frame(record.bytes);
        return;
      case 'close':
        // The broker ends the stream right after; the close is told when it has.
        this.#closeRecord = { code: record.code, reason: record.reason };
        this.#socket.end();
        return;
      case 'oversize':
        this.#socketError = new Error(`the broker sent a frame of ${record.length} bytes`);
        this.#socket.destroy();
        return;
      case 'invalid':
        this.#socketError = new Error(record.message);
        this.#socket.destroy();
        return;
    }
  }

  listen(listener: LinkListener): void {
    this.#events.listen(listener);
  }

  send(frame: Uint8Array): void {
    if (this.#events.closed || !this.#socket.writable) return;
    // Two writes in one syscall, without copying the frame behind its prefix.
    this.#socket.cork();
    this.#socket.write(streamFramePrefix(frame.length));
    this.#socket.write(frame);
    this.#socket.uncork();
  }

  close(code: number, reason: string, closeHandshakeTimeoutMs: number): Promise<void> {
    this.#events.mute();
    const socket = this.#socket;
    if (socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        socket.destroy();
        resolve();
      }, closeHandshakeTimeoutMs);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      // Our close record, then our end of the stream; the broker ends its side in turn.
      socket.end(encodeStreamClose(code, reason));
    });
  }
}
