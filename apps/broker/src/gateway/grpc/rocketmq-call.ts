import type { Clock } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import type { AccessControl } from '../../auth/access-control.js';
import { parseRocketSignature } from '../../auth/rocketmq-signature.js';
import type { AdminService, MessagingService } from '../../engine/index.js';
import type { ConnectionUsage, RequestPipeline } from '../pipeline/request-pipeline.js';
import { type FrameVerdict, type RequestFrame, SessionAccess } from '../session-access.js';
import type { GrpcCall } from './grpc-stream-call.js';

/**
 * The broker as the RocketMQ front door calls it: the messaging calls every front door makes, and
 * two reads of the catalogue RocketMQ's protocol carries to its clients (a topic's route and
 * type in `QueryRoute`, a group's retry policy in the Telemetry settings).
 */
export type RocketEngine = MessagingService & Pick<AdminService, 'describeTopic' | 'describeGroup'>;

/** What every RPC handler of the RocketMQ front door reaches. */
export interface RocketDeps {
  readonly engine: RocketEngine;
  readonly clock: Clock;
  readonly maxBodyBytes: number;
  /** What the broker tells consumers to long-poll for, and the longest poll it holds. */
  readonly longPollingTimeoutMs: number;
  /** Topics a client names that do not exist yet are created on first use (`autoCreateTopics`). */
  readonly autoCreateTopics: boolean;
}

/**
 * One authenticated call: who made it (`x-mq-client-id`), what its principal may do, and the
 * request pipeline it passes with its connection's usage, as every front door's requests do.
 */
export interface RocketCall {
  readonly clientId: string | undefined;
  readonly access: SessionAccess;
  readonly pipeline: RequestPipeline;
  /** The HTTP/2 connection's requests in flight, counted against the per-connection caps. */
  readonly usage: ConnectionUsage;
}

/** Where an authenticated call's requests go: the pipeline, and its connection's usage. */
export type CallAdmission = Pick<RocketCall, 'pipeline' | 'usage'>;

/**
 * Authenticate a call by its headers, as a session's `hello` is (DESIGN §7): with an auth file,
 * the RocketMQ signature (`authorization`, `x-mq-date-time`) must name a principal and prove it.
 * @throws BrokerError UNAUTHORIZED when it does not.
 */
export function authenticateCall(
  headers: Pick<GrpcCall, 'header'>,
  access: AccessControl,
  clock: Clock,
  admission: CallAdmission,
): RocketCall {
  const sessionAccess = new SessionAccess(access);
  const refusal = sessionAccess.signed(
    parseRocketSignature(
      headerOf(headers, 'authorization'),
      headerOf(headers, 'x-mq-date-time'),
      clock.now(),
    ),
  );
  if (refusal !== undefined) throw BrokerError.of('UNAUTHORIZED', refusal);
  return {
    clientId: headerOf(headers, 'x-mq-client-id'),
    access: sessionAccess,
    pipeline: admission.pipeline,
    usage: admission.usage,
  };
}

/**
 * Admit `request` (the client protocol's request this RPC is) through the pipeline's access and
 * caps stages, as a session admits its frames: the principal for the delivery history, or the
 * refusal thrown to the one error path.
 */
export function admitted(call: RocketCall, request: RequestFrame): string | undefined {
  return permitted(call.pipeline.admit(request, call.access, call.usage));
}

/**
 * The principal a verdict allows (for the delivery history), or the verdict's refusal thrown to
 * the one error path (401, 403, or 530 past a publish rate).
 */
export function permitted(verdict: FrameVerdict): string | undefined {
  if (!verdict.ok) throw verdict.error;
  return verdict.principal;
}

function headerOf(headers: Pick<GrpcCall, 'header'>, name: string): string | undefined {
  const value = headers.header(name);
  return value === '' ? undefined : value;
}
