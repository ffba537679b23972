import {
  ADMIN_ANSWER_SCHEMAS,
  type AdminAnswer,
  type AdminRetryOptions,
  type AdminRoute,
  checkAdminAnswer,
  retryUnavailable,
} from '@ricochet/protocol';
import type { BrokerEndpoint } from './broker-endpoint.js';
import { CliError } from './cli-error.js';
import type { ExitCodeName } from './exit-codes.js';
import { unreachableError } from './unreachable-error.js';

/** How long one admin request may take before the CLI calls the broker unavailable: 10 s. */
export const ADMIN_REQUEST_TIMEOUT_MS = 10_000;

/** The error body every admin route answers with (apps/broker/src/admin/http-error.ts). */
interface AdminErrorBody {
  readonly error?: {
    readonly code?: number;
    readonly name?: string;
    readonly message?: string;
    readonly issues?: readonly { readonly path?: readonly string[]; readonly message?: string }[];
  };
}

/** Options of {@link AdminApi}. */
export interface AdminApiOptions {
  /**
   * How a `503` is retried (`retryUnavailable` of `@ricochet/protocol`); a test brings its own
   * sleep and clock. @default real timers, the system clock, `Math.random`
   */
  readonly retry?: Partial<AdminRetryOptions>;
}

/**
 * The broker's admin HTTP API (DESIGN.md §4, §8) as the CLI uses it. Every request carries
 * `Authorization: Bearer <token>` when a token is given (DESIGN.md §7); every failure becomes a
 * {@link CliError} whose exit code says what kind of failure it was.
 *
 * An idempotent request (a read, a `PUT` of a config, pause and resume) answered `503` is made
 * again after a short backoff, a few times within a few seconds, honouring `Retry-After`: a
 * spread cluster answers `503` for a queue between owners when its own wait for the owner runs
 * out. A redrive is not: a repeat could redrive what the first one took.
 */
export class AdminApi {
  readonly #endpoint: BrokerEndpoint;
  readonly #token: string | undefined;
  readonly #retry: AdminRetryOptions;

  constructor(endpoint: BrokerEndpoint, token: string | undefined, options: AdminApiOptions = {}) {
    this.#endpoint = endpoint;
    this.#token = token;
    this.#retry = { sleep: sleepMs, ...options.retry };
  }

  get(path: string): Promise<unknown> {
    return this.request('GET', path);
  }

  put(path: string, body: unknown): Promise<unknown> {
    return this.request('PUT', path, body);
  }

  post(path: string, body: unknown): Promise<unknown> {
    return this.request('POST', path, body);
  }

  /**
   * Call `route` (`'GET /v1/groups/:group'`) at `path` (`/v1/groups/orders`), with `body` for a
   * PUT or POST, and check the answer against the route's schema in `@ricochet/protocol`. The
   * answer comes back as the broker sent it, so `--json` shows fields a newer broker adds.
   * @throws CliError FAILED when the answer does not match the schema.
   */
  async call<R extends AdminRoute>(route: R, path: string, body?: unknown): Promise<AdminAnswer<R>> {
    const method = route.slice(0, route.indexOf(' '));
    const answer = await this.request(method, path, body);
    const check = checkAdminAnswer(ADMIN_ANSWER_SCHEMAS[route], answer);
    if (check.ok) return check.value as AdminAnswer<R>;
    throw new CliError(
      'FAILED',
      `${method} ${path} answered something the CLI does not understand: ${check.problem}`,
      {
        hint: 'is the broker the same version as the CLI?',
      },
    );
  }

  /**
   * Whether anything answers HTTP at the endpoint: `GET /healthz`, which is open even with auth on.
   * @throws CliError UNAVAILABLE when nothing does.
   */
  async probe(): Promise<void> {
    await this.#fetch('GET', '/healthz', undefined);
  }

  /**
   * One request, made again while it is answered `503` if it is idempotent (see the class);
   * resolves with the parsed JSON answer of a 2xx.
   */
  async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await retryUnavailable(
      `${method} ${path}`,
      async () => {
        const response = await this.#fetch(method, path, body);
        const retryAfter = response.headers.get('retry-after') ?? undefined;
        return { status: response.status, retryAfter, ok: response.ok, text: await response.text() };
      },
      this.#retry,
    );
    if (answer.ok) return answer.text === '' ? undefined : parseJson(answer.text, method, path);
    throw this.#failure(method, path, answer.status, answer.text);
  }

  /**
   * Open a `text/event-stream` route (`GET /v1/events`) and return its body, read until `signal`
   * aborts. No request deadline: a stream lasts as long as its reader.
   * @throws CliError as {@link request} does for a refusal.
   */
  async stream(path: string, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    let response: Response;
    try {
      response = await fetch(`${this.#endpoint.adminUrl}${path}`, {
        headers: this.#token === undefined ? {} : { authorization: `Bearer ${this.#token}` },
        signal,
      });
    } catch (error) {
      throw unreachableError(this.#endpoint, error);
    }
    if (!response.ok || !response.body)
      throw this.#failure('GET', path, response.status, await response.text());
    return response.body;
  }

  async #fetch(method: string, path: string, body: unknown): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(`${this.#endpoint.adminUrl}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(ADMIN_REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw unreachableError(this.#endpoint, error);
    }
  }

  #failure(method: string, path: string, status: number, text: string): CliError {
    const payload = tryParseJson(text) as AdminErrorBody | undefined;
    const brokerMessage = payload?.error?.message ?? (text.trim().slice(0, 300) || `HTTP ${status}`);
    const detailLines = (payload?.error?.issues ?? []).map((issue) => {
      const where = issue.path !== undefined && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      return `${where}${issue.message ?? 'invalid'}`;
    });
    const request = `${method} ${path}`;
    switch (status) {
      case 401:
        return new CliError('UNAUTHORIZED', `the broker refused ${request}: ${brokerMessage}`, {
          hint:
            this.#token === undefined
              ? 'this broker needs a token: pass --token <token> or set RICOCHET_TOKEN'
              : 'the broker does not know this token: check --token / RICOCHET_TOKEN against its --auth-file',
        });
      case 403:
        return new CliError('FORBIDDEN', `the token's principal may not ${request}: ${brokerMessage}`, {
          hint:
            method === 'GET'
              ? 'it needs "admin": "read" (or "write") in the broker\'s --auth-file'
              : 'it needs "admin": "write" in the broker\'s --auth-file',
        });
      case 404:
        return new CliError('NOT_FOUND', brokerMessage, { hint: notFoundHint(path) });
      case 503:
        return new CliError('UNAVAILABLE', `the broker is unavailable: ${brokerMessage}`, {
          hint: 'it may be shutting down, or moving a queue to a new owner (`GET /readyz` says when every queue has one); try again once it is back',
        });
      default:
        return new CliError(exitOfStatus(status), `the broker refused ${request}: ${brokerMessage}`, {
          detailLines,
        });
    }
  }
}

function sleepMs(delayMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, delayMs));
}

function exitOfStatus(status: number): ExitCodeName {
  // 400 bad request (a config that does not validate), 409, 413, 429 (throttled, code 530).
  return status >= 400 && status < 500 ? 'REJECTED' : 'FAILED';
}

function notFoundHint(path: string): string {
  if (path.startsWith('/v1/topics')) return 'list the topics with `ricochet topics ls`';
  if (path.startsWith('/v1/messages'))
    return 'a message id is what `ricochet send` printed (`ricochet dlq ls <group>` lists dead-lettered ones)';
  return 'list the groups with `ricochet groups ls`';
}

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseJson(text: string, method: string, path: string): unknown {
  const parsed = tryParseJson(text);
  if (parsed === undefined) {
    throw new CliError(
      'FAILED',
      `${method} ${path} answered something that is not JSON: ${text.slice(0, 200)}`,
      {
        hint: 'is --endpoint a Ricochet broker?',
      },
    );
  }
  return parsed;
}
