import { storeSpread } from './test-store.js';

/**
 * The transport matrix of the contract suite: each rule runs on every transport that serves it
 * (issue 16). A rule file wraps its body in
 * `describe.each(transportsServing('stream'))('… over %s', (transport) => …)` and takes its
 * endpoint from `broker.endpointFor(transport)`.
 */
export const TRANSPORTS = ['ws', 'tcp', 'http'] as const;

/**
 * A transport of the matrix: `ws` (WebSocket on the main port), `tcp` (the TCP listener), `http`
 * (request/response, `POST /v1/frames` on the main port).
 */
export type TransportName = (typeof TRANSPORTS)[number];

/**
 * What a rule needs from the transport: `stream` for push consumption (the broker sends
 * `deliver` frames unasked), `request` when a producer and a simple consumer are enough.
 */
export type TransportNeed = 'stream' | 'request';

/** Transports whose links are streams; a request/response transport serves `request` rules only. */
const STREAM_TRANSPORTS: ReadonlySet<TransportName> = new Set(['ws', 'tcp']);

/**
 * The transports a rule runs on. With queues spread over brokers (`contract-postgres-spread`),
 * WebSocket only: brokers forward to each other over their own sessions whatever transport a
 * client came in on, and every transport reaches the same router, so the other runs (LMDB, and
 * PostgreSQL with standbys) cover the matrix and this one covers the brokers between.
 */
export function transportsServing(need: TransportNeed): TransportName[] {
  if (storeSpread()) return ['ws'];
  return TRANSPORTS.filter((transport) => need === 'request' || STREAM_TRANSPORTS.has(transport));
}
