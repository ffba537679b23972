import { Packr } from 'msgpackr';
import { WebSocketServer } from 'ws';

/**
 * The reference every Ricochet figure is compared with: a bare `ws` server speaking msgpackr
 * (standard MessagePack, as our codec), with no storage and no validation. It answers the same
 * client patterns as the broker, one WebSocket message per request and per delivery.
 *
 * Run as a child process: `node --import tsx reference-server.ts`; it prints its port.
 */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

type Request =
  | { t: 'send'; id: number; body: Uint8Array }
  | { t: 'receive'; id: number; max: number }
  | { t: 'ack'; id: number; offset: number }
  | { t: 'subscribe'; credit: number }
  | { t: 'pushAck'; offset: number };

const log: Uint8Array[] = [];
let nextToDeliver = 0;
/** Push subscribers, to hand new messages to as they arrive. */
const pushers = new Set<() => void>();

const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 * 1024 });
server.on('connection', (socket) => {
  let credit = 0;
  socket.on('close', () => pushers.delete(push));
  const push = () => {
    // One delivery per WebSocket message, while the consumer has credit.
    while (credit > 0 && nextToDeliver < log.length) {
      const offset = nextToDeliver++;
      credit--;
      socket.send(packr.pack({ t: 'deliver', offset, body: log[offset] }));
    }
  };
  socket.on('message', (data: Buffer) => {
    const request = packr.unpack(data) as Request;
    switch (request.t) {
      case 'send':
        log.push(request.body);
        socket.send(packr.pack({ t: 'sent', id: request.id, offset: log.length - 1 }));
        for (const pusher of pushers) pusher();
        break;
      case 'receive': {
        const messages = [];
        for (let i = 0; i < request.max && nextToDeliver < log.length; i++) {
          const offset = nextToDeliver++;
          messages.push({ offset, body: log[offset] });
        }
        socket.send(packr.pack({ t: 'messages', id: request.id, messages }));
        break;
      }
      case 'ack':
        socket.send(packr.pack({ t: 'acked', id: request.id }));
        break;
      case 'subscribe':
        credit = request.credit;
        pushers.add(push);
        push();
        break;
      case 'pushAck':
        credit++;
        push();
        break;
    }
  });
});
server.on('listening', () => {
  const address = server.address();
  console.log(
    `reference listening on ${typeof address === 'object' && address !== null ? address.port : address}`,
  );
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
