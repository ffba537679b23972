/** Where a listening broker can be reached. */
export interface BrokerAddress {
  readonly host: string;
  readonly port: number;
  /** The WebSocket endpoint clients take: `ws://host:port`, or `wss://host:port` with TLS. */
  readonly url: string;
  /** The TCP listener's port, when `tcpPort` is set. */
  readonly tcpPort?: number;
  /** The TCP endpoint, `tcp://host:port` or `tls://host:port` with TLS, when `tcpPort` is set. */
  readonly tcpUrl?: string;
  /** The RocketMQ 5 gRPC endpoint's port, when `grpcPort` is set. */
  readonly grpcPort?: number;
  /** The RocketMQ 5 endpoint, `grpc://host:port`, when `grpcPort` is set. */
  readonly grpcUrl?: string;
  /** Every endpoint, WebSocket first: what the start line names. */
  readonly endpoints: readonly string[];
}
