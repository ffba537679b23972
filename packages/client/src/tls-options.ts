import { importWs, type WebSocketImplementation } from './web-socket.js';

/**
 * TLS settings for a `wss://` or `tls://` endpoint, passed as they are to the socket (Node's
 * `tls.connect` options, through the `ws` package for `wss://`). Every field is optional.
 */
export interface TlsOptions {
  /** Certificate authorities to trust instead of the system's, PEM. @default undefined (the system's) */
  readonly ca?: string | Uint8Array | readonly (string | Uint8Array)[];
  /** A client certificate chain, PEM, for brokers behind a proxy that asks for one. @default undefined */
  readonly cert?: string | Uint8Array;
  /** The private key of `cert`, PEM. @default undefined */
  readonly key?: string | Uint8Array;
  /** The name the broker's certificate must carry, when it differs from the endpoint's host. @default the endpoint's host */
  readonly servername?: string;
  /**
   * Whether to refuse a certificate that does not verify. Turning it off lets anyone in the middle
   * read and change the traffic; it exists for local experiments only. @default true
   */
  readonly rejectUnauthorized?: boolean;
}

/**
 * The OpenSSL and Node codes of a certificate the client refused. Retrying meets the same
 * certificate, so these end the connection (`TLS_ERROR`) instead of feeding the reconnect loop.
 */
const CERTIFICATE_ERROR_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a socket error says the broker's certificate was refused; its code if so. */
export function certificateErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CERTIFICATE_ERROR_CODES.has(code) ? code : undefined;
}

/**
 * The `ws` package with `tls` bound to every socket it opens. Standard WebSockets take no TLS
 * settings, so with this option the client uses `ws` even where the runtime has its own (Node only).
 */
export async function tlsWebSocket(tls: TlsOptions): Promise<WebSocketImplementation> {
  const { default: ws } = await importWs();
  const settings = { ...tls, ca: Array.isArray(tls.ca) ? [...tls.ca] : tls.ca };
  class TlsWebSocket extends ws {
    constructor(url: string, protocols: string | string[]) {
      super(url, protocols, settings);
    }
  }
  return { create: TlsWebSocket, binaryType: 'nodebuffer' };
}
