import type { Clock } from '@ricochet/core';
import { Counter, type Registry } from 'prom-client';
import { type AuthFile, type Principal, readAuthFile } from './auth-file.js';
import { type Action, describeAction, isPermitted } from './permissions.js';
import { PrincipalDirectory, tokenDigest } from './principal-directory.js';
import { PublishRateLimiter, type RateDecision } from './publish-rate.js';
import type { RocketSignatureParse } from './rocketmq-signature.js';

/** Why a request was refused, the label of `ricochet_auth_failures_total`. */
export type AuthFailureReason = 'missing_token' | 'unknown_token' | 'forbidden';
const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = ['missing_token', 'unknown_token', 'forbidden'];

/** The slice of a pino logger access control writes to. */
export interface AccessLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * Whoever presented a token: a WebSocket session keeps one for its whole life, an HTTP request
 * makes one. It holds the token's digest, never the token, and the principal it named under the
 * auth file in force when it was last looked up: after a reload it is looked up again, so a
 * changed permission applies to open sessions at their next request and a removed token stops
 * working.
 */
export class Caller {
  readonly digest: Buffer;
  generation: number;
  principal: Principal | undefined;
  /** A RocketMQ client's access key, when it proved itself by signature rather than by token. */
  readonly accessKey: string | undefined;

  constructor(digest: Buffer, generation: number, principal: Principal | undefined, accessKey?: string) {
    this.digest = digest;
    this.generation = generation;
    this.principal = principal;
    this.accessKey = accessKey;
  }
}

/** A token checked: the caller, or why it was refused (a 401). */
export type Authentication =
  | { readonly ok: true; readonly caller: Caller }
  | { readonly ok: false; readonly reason: 'missing_token' | 'unknown_token'; readonly message: string };

/** An action checked: the principal that may take it, or the refusal (401 or 403) and its text. */
export type Authorization =
  | { readonly ok: true; readonly principal: Principal }
  | { readonly ok: false; readonly status: 401 | 403; readonly message: string };

/** The outcome of a reload: how many principals are now in force, or why the file was refused. */
export type ReloadOutcome =
  | { readonly ok: true; readonly principals: number }
  | { readonly ok: false; readonly message: string };

export interface AccessControlOptions {
  /** The principals in force, or `undefined` when the broker runs without authentication. */
  readonly authFile: AuthFile | undefined;
  /** Where `reload()` reads the file again; `undefined` when there is nothing to reload. */
  readonly authFilePath?: string | undefined;
  readonly registry: Registry;
  readonly log: AccessLog;
  readonly clock: Clock;
}

/**
 * Who may do what (DESIGN.md §7), for both front doors: the WebSocket gateway and the admin HTTP
 * routes ask it before they call the engine, so a refused request changes nothing and never
 * learns whether its topic or group exists. It holds the auth file in force (swapped whole on
 * reload), the per-principal publish rates, and counts and logs every refusal by principal name,
 * never by token. Without an auth file it is disabled and the front doors skip it.
 */
export class AccessControl {
  readonly enabled: boolean;
  readonly #authFilePath: string | undefined;
  readonly #log: AccessLog;
  readonly #failures: Counter<'reason'>;
  readonly #rates: PublishRateLimiter;
  #directory: PrincipalDirectory;
  #generation = 0;

  constructor(options: AccessControlOptions) {
    this.enabled = options.authFile !== undefined;
    this.#authFilePath = options.authFilePath;
    this.#log = options.log;
    this.#rates = new PublishRateLimiter(options.clock);
    this.#directory = new PrincipalDirectory(options.authFile?.principals ?? []);
    this.#failures = new Counter({
      name: 'ricochet_auth_failures_total',
      help: 'Requests refused: no token (missing_token), a token no principal holds (unknown_token), or an action the principal may not take (forbidden)',
      labelNames: ['reason'],
      registers: [options.registry],
    });
    for (const reason of AUTH_FAILURE_REASONS) this.#failures.inc({ reason }, 0);
  }

  /** Check a presented token; `where` says which door, for the log. */
  authenticate(token: string | undefined, where: string): Authentication {
    if (token === undefined || token === '') {
      this.#failures.inc({ reason: 'missing_token' });
      this.#log.warn({ where, reason: 'missing_token' }, 'request refused: no token');
      return { ok: false, reason: 'missing_token', message: 'a token is required' };
    }
    const digest = tokenDigest(token);
    const principal = this.#directory.findByDigest(digest);
    if (!principal) {
      this.#failures.inc({ reason: 'unknown_token' });
      this.#log.warn({ where, reason: 'unknown_token' }, 'request refused: the token is not accepted');
      return { ok: false, reason: 'unknown_token', message: 'the token is not accepted' };
    }
    return { ok: true, caller: new Caller(digest, this.#generation, principal) };
  }

  /**
   * Check a RocketMQ client's signed request (`--grpc-port`): its access key names the principal,
   * the HMAC of its date-time under that principal's secret key proves it. `undefined`: the
   * request carried no signature. Refusals count as a missing or unknown token.
   */
  authenticateSignature(parsed: RocketSignatureParse | undefined, where: string): Authentication {
    if (parsed === undefined) return this.authenticate(undefined, where);
    if (!parsed.ok) {
      this.#failures.inc({ reason: 'unknown_token' });
      this.#log.warn(
        { where, reason: 'unknown_token', problem: parsed.message },
        'request refused: bad signature',
      );
      return { ok: false, reason: 'unknown_token', message: parsed.message };
    }
    const { accessKey, dateTime, signature } = parsed.signed;
    const principal = this.#directory.verifyRocketSignature(accessKey, dateTime, signature);
    if (!principal) {
      this.#failures.inc({ reason: 'unknown_token' });
      this.#log.warn({ where, reason: 'unknown_token' }, 'request refused: the signature is not accepted');
      return {
        ok: false,
        reason: 'unknown_token',
        message: 'the access key or its signature is not accepted',
      };
    }
    const digest = Buffer.from(principal.tokenSha256, 'hex');
    return { ok: true, caller: new Caller(digest, this.#generation, principal, accessKey) };
  }

  /** May `caller` take `action` under the auth file in force now? Refusals are counted and logged. */
  authorize(caller: Caller, action: Action, where: string): Authorization {
    const principal = this.#principalOf(caller);
    if (!principal) {
      this.#failures.inc({ reason: 'unknown_token' });
      this.#log.warn(
        { where, reason: 'unknown_token' },
        'request refused: the token was removed by a reload',
      );
      return { ok: false, status: 401, message: 'the token is no longer accepted' };
    }
    if (isPermitted(principal, action)) return { ok: true, principal };
    const what = describeAction(action);
    this.#failures.inc({ reason: 'forbidden' });
    this.#log.warn(
      { where, reason: 'forbidden', principal: principal.name, action: what },
      'request refused: not permitted',
    );
    return { ok: false, status: 403, message: `principal "${principal.name}" may not ${what}` };
  }

  /** Admit `count` messages from `principal` under its `publishRatePerSecond`, if it has one. */
  admitPublish(principal: Principal, count: number): RateDecision {
    if (principal.publishRatePerSecond === undefined) return { ok: true };
    return this.#rates.take(principal.name, principal.publishRatePerSecond, count);
  }

  /**
   * Read the auth file again and put it in force. A file that cannot be read or fails validation
   * is refused and logged, and the one in force stays: a typo never locks everyone out.
   */
  async reload(): Promise<ReloadOutcome> {
    if (this.#authFilePath === undefined) {
      const message = 'no auth file to reload (the broker was started without --auth-file)';
      this.#log.warn({}, message);
      return { ok: false, message };
    }
    const read = await readAuthFile(this.#authFilePath);
    if (!read.ok) {
      this.#log.error(
        { authFile: this.#authFilePath, problem: read.message },
        'auth file refused on reload; the previous one stays in force',
      );
      return { ok: false, message: read.message };
    }
    this.replace(read.authFile);
    const principals = read.authFile.principals.length;
    this.#log.info({ authFile: this.#authFilePath, principals }, 'auth file reloaded');
    return { ok: true, principals };
  }

  /** Put `authFile` in force: open sessions are judged by it from their next request. */
  replace(authFile: AuthFile): void {
    this.#directory = new PrincipalDirectory(authFile.principals);
    this.#generation++;
    this.#rates.retainOnly(new Set(authFile.principals.map((principal) => principal.name)));
  }

  #principalOf(caller: Caller): Principal | undefined {
    if (caller.generation !== this.#generation) {
      caller.principal =
        caller.accessKey === undefined
          ? this.#directory.findByDigest(caller.digest)
          : this.#directory.findByAccessKey(caller.accessKey);
      caller.generation = this.#generation;
    }
    return caller.principal;
  }
}
