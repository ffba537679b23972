import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';

/** A certificate chain and its private key, PEM, as read from `--tls-cert` and `--tls-key`. */
export interface TlsCredentials {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** The outcome of {@link TlsReloader.reload}: a bad pair is refused and the old one stays in force. */
export type TlsReloadResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'tls-off' | 'invalid'; readonly message: string };

/**
 * Read a PEM pair and check it the way the TLS server would use it: a file that is not PEM, or a
 * key that does not match the certificate, throws here rather than at the next handshake.
 * @throws Error naming the files and what OpenSSL said.
 */
export async function loadTlsCredentials(certPath: string, keyPath: string): Promise<TlsCredentials> {
  try {
    const [cert, key] = await Promise.all([readFile(certPath), readFile(keyPath)]);
    createSecureContext({ cert, key });
    return { cert, key };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot use TLS certificate ${certPath} with key ${keyPath}: ${why}`, { cause: error });
  }
}

/** Where a reloaded pair goes: Node's `tls.Server#setSecureContext` (an https server is one). */
export interface SecureContextTarget {
  setSecureContext(options: { cert: Buffer; key: Buffer }): void;
}

/**
 * Swaps the certificate of the listening servers (on SIGHUP): new handshakes use the new pair,
 * connections already open keep theirs. A pair that cannot be read or does not match is refused and
 * logged; the pair in force stays.
 */
export class TlsReloader {
  readonly #certPath: string;
  readonly #keyPath: string;
  readonly #targets: SecureContextTarget[];
  readonly #log: Pick<FastifyBaseLogger, 'info' | 'error'>;

  constructor(options: {
    readonly certPath: string;
    readonly keyPath: string;
    readonly targets: readonly SecureContextTarget[];
    readonly log: Pick<FastifyBaseLogger, 'info' | 'error'>;
  }) {
    this.#certPath = options.certPath;
    this.#keyPath = options.keyPath;
    this.#targets = [...options.targets];
    this.#log = options.log;
  }

  /** Serve `target` too (the TCP listener beside the HTTPS server). */
  addTarget(target: SecureContextTarget): void {
    this.#targets.push(target);
  }

  /** Read the files again and put the pair in force on every target if it is valid. Never throws. */
  async reload(): Promise<TlsReloadResult> {
    let credentials: TlsCredentials;
    try {
      credentials = await loadTlsCredentials(this.#certPath, this.#keyPath);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#log.error(
        { certPath: this.#certPath, keyPath: this.#keyPath, reason: message },
        'TLS reload refused; the old certificate stays in force',
      );
      return { ok: false, reason: 'invalid', message };
    }
    for (const target of this.#targets)
      target.setSecureContext({ cert: credentials.cert, key: credentials.key });
    this.#log.info({ certPath: this.#certPath }, 'TLS certificate reloaded');
    return { ok: true };
  }
}
