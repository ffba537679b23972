import diagnosticsChannel from 'node:diagnostics_channel';
import type { Server, Socket } from 'node:net';

/** Node publishes every TCP client socket the process creates on this channel. */
const CLIENT_SOCKET_CHANNEL = 'net.client.socket';

/**
 * Watches the bytes on the broker's connections, from both ends when the client runs in this
 * process (as a test's consumers and producers do): the broker's sockets come from its server's
 * `connection` event, the clients' from Node's `net.client.socket` diagnostics channel.
 *
 * With both ends in hand, "a frame is on its way" is exact: one end wrote bytes the other has not
 * read yet. Each end's count only grows, and a socket that closes leaves its last counts behind,
 * so {@link bytes} is a mark that changes whenever anything moved.
 */
export class SocketActivity {
  readonly #server: Server;
  readonly #brokerSockets = new Set<Socket>();
  readonly #clientSockets = new Set<Socket>();
  #closedBytes = 0;
  #brokerPort: number | undefined;
  readonly #onConnection = (socket: Socket) => this.#watch(this.#brokerSockets, socket);
  readonly #onClientSocket = (message: unknown) => {
    const socket = (message as { socket?: Socket }).socket;
    if (socket) this.#watch(this.#clientSockets, socket);
  };

  constructor(server: Server) {
    this.#server = server;
    server.on('connection', this.#onConnection);
    diagnosticsChannel.subscribe(CLIENT_SOCKET_CHANNEL, this.#onClientSocket);
  }

  /** The broker listens on `port`: client sockets connected anywhere else are not watched. */
  listening(port: number): void {
    this.#brokerPort = port;
  }

  /** Every byte read or written on the broker's connections so far, at both ends. */
  get bytes(): number {
    let total = this.#closedBytes;
    for (const socket of this.#brokerSockets) total += socket.bytesRead + socket.bytesWritten;
    for (const socket of this.#clientSockets) {
      if (this.#isOurs(socket)) total += socket.bytesRead + socket.bytesWritten;
    }
    return total;
  }

  /**
   * Whether bytes are on their way: a broker socket still has bytes queued, a client in this
   * process is still connecting, or one end wrote what the other has not read yet.
   */
  get inFlight(): boolean {
    const clientsByPort = new Map<number, Socket>();
    for (const socket of this.#clientSockets) {
      if (socket.connecting) return true;
      if (this.#isOurs(socket) && socket.localPort !== undefined) clientsByPort.set(socket.localPort, socket);
    }
    for (const socket of this.#brokerSockets) {
      if (socket.writableLength > 0) return true;
      const peer = socket.remotePort === undefined ? undefined : clientsByPort.get(socket.remotePort);
      if (peer === undefined) continue; // a client in another process: only time tells
      if (peer.writableLength > 0) return true;
      if (peer.bytesWritten !== socket.bytesRead || socket.bytesWritten !== peer.bytesRead) return true;
    }
    return false;
  }

  /** What the watch sees now, for error messages. */
  describe(): string {
    return `${this.#brokerSockets.size} broker connection(s), ${this.#clientSockets.size} in-process client socket(s)`;
  }

  /** Stop watching. */
  close(): void {
    this.#server.off('connection', this.#onConnection);
    diagnosticsChannel.unsubscribe(CLIENT_SOCKET_CHANNEL, this.#onClientSocket);
    this.#brokerSockets.clear();
    this.#clientSockets.clear();
  }

  #isOurs(socket: Socket): boolean {
    return this.#brokerPort !== undefined && socket.remotePort === this.#brokerPort;
  }

  #watch(sockets: Set<Socket>, socket: Socket): void {
    sockets.add(socket);
    let counted = sockets === this.#brokerSockets;
    if (!counted) {
      // A client socket that turns out to lead elsewhere is of no interest.
      socket.once('connect', () => {
        counted = this.#isOurs(socket);
        if (!counted) sockets.delete(socket);
      });
    }
    socket.once('close', () => {
      if (sockets.delete(socket) && counted) this.#closedBytes += socket.bytesRead + socket.bytesWritten;
    });
  }
}
