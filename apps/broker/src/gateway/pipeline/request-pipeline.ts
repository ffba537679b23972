import { BrokerError } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import { type ConnectionLimits, type SessionUsage, waitsForMessages } from '../connection-limits.js';
import type { FrameVerdict, RequestFrame, SessionAccess } from '../session-access.js';

/**
 * One connection's requests in progress, as the per-connection caps count them. Every front door
 * keeps one per connection (a session's, an HTTP/2 connection's of the RocketMQ front door), so
 * `maxInflightRequestsPerConnection` and `maxWaitingReceivesPerConnection` mean the same on each.
 */
export class ConnectionUsage implements SessionUsage {
  inflightRequests = 0;
  /** Receives in flight that may wait for messages (long polls). */
  waitingReceives = 0;
  readonly #subscriptions: () => number;
  #idleWaiters: (() => void)[] = [];

  /** @param subscriptions the connection's open push subscriptions (none on a wire without them) */
  constructor(subscriptions: () => number = () => 0) {
    this.#subscriptions = subscriptions;
  }

  get subscriptions(): number {
    return this.#subscriptions();
  }

  /**
   * An admitted request began: counted until {@link end}. A front door whose request is an async
   * function's await counts it with these two in `try`/`finally` (no promise of its own per call);
   * {@link RequestPipeline.run} counts one handed over as a promise.
   */
  begin(request: RequestFrame): void {
    this.inflightRequests++;
    if (waitsForMessages(request)) this.waitingReceives++;
  }

  /** A request begun with {@link begin} ended, answered or failed. */
  end(request: RequestFrame): void {
    this.inflightRequests--;
    if (waitsForMessages(request)) this.waitingReceives--;
    if (this.inflightRequests === 0 && this.#idleWaiters.length > 0) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  /** Resolves once no request is in flight. */
  idle(): Promise<void> {
    if (this.inflightRequests === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}

export interface RequestPipelineOptions {
  /** Whether the broker still takes new work (false while draining). */
  readonly accepting: () => boolean;
  readonly limits: Pick<ConnectionLimits, 'checkRequest'>;
  /** Where refusals are counted, by the catalogue's code. */
  readonly metrics: { rejected(code: number): void };
  readonly log: FastifyBaseLogger;
}

/**
 * The stages every front door's request passes, whatever its wire (docs/architecture.md "The
 * service seam"): a front door decodes its wire into a request of the client protocol (a
 * {@link RequestFrame}: Ricochet's sessions read them off the wire, the RocketMQ front door builds
 * them from its RPCs), and the pipeline says whether it may run, counts it while it runs, and turns
 * its failure into the catalogue's error, which the front door encodes in its wire's words (an
 * `error` frame, a RocketMQ `Code`). The merging of one turn's calls into one engine call is the
 * stage in `turn-merger.ts`, for the front doors whose clients make one call per message.
 *
 * In order: the broker takes work ({@link draining}; a session between brokers passes this stage
 * only, its client was judged by the forwarding broker), the caller's principal may make the
 * request and its publish rate allows it ({@link admit}, access), the connection is within its
 * caps (admit, limits), then the call, counted in the connection's usage ({@link run}); a failure
 * is counted by its code ({@link failed}).
 */
export class RequestPipeline {
  readonly #options: RequestPipelineOptions;

  constructor(options: RequestPipelineOptions) {
    this.#options = options;
  }

  /** `503 BROKER_UNAVAILABLE` while the broker drains, for every request; `undefined` otherwise. */
  draining(): BrokerError | undefined {
    return this.#options.accepting()
      ? undefined
      : BrokerError.of('BROKER_UNAVAILABLE', 'the broker is shutting down');
  }

  /**
   * The verdict on a client's request: permission before anything is looked up (a refusal changes
   * nothing and reveals nothing), then the connection's caps.
   */
  admit(frame: RequestFrame, access: SessionAccess, usage: SessionUsage): FrameVerdict {
    const verdict = access.check(frame);
    if (!verdict.ok) return verdict;
    const refusal = this.#options.limits.checkRequest(frame, usage);
    return refusal === undefined ? verdict : { ok: false, endSession: false, error: refusal };
  }

  /** Run an admitted request, counted in its connection's `usage` until it settles. */
  run<Answer>(frame: RequestFrame, usage: ConnectionUsage, work: () => Promise<Answer>): Promise<Answer> {
    usage.begin(frame);
    let answer: Promise<Answer>;
    try {
      answer = work();
    } catch (error) {
      answer = Promise.reject(error);
    }
    return answer.finally(() => usage.end(frame));
  }

  /**
   * A request's failure as the catalogue's error its front door answers with, counted by code. An
   * error outside the catalogue is a bug: logged with `context`, answered `INTERNAL_ERROR`.
   */
  failed(error: unknown, context: Record<string, unknown>): BrokerError {
    if (error instanceof BrokerError) {
      this.#options.metrics.rejected(error.code);
      return error;
    }
    this.#options.log.error({ err: error, ...context }, 'request failed');
    const internal = BrokerError.of('INTERNAL_ERROR', 'the broker failed to handle the request');
    this.#options.metrics.rejected(internal.code);
    return internal;
  }
}
