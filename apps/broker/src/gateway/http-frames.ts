import {
  type BrokerFrame,
  decodeBrokerFrame,
  decodeClientFrame,
  ERROR_CODES,
  encodeFrame,
  encodeFrameBatch,
  PROTOCOL_VERSION,
  peekFrameType,
  splitFrameBatch,
} from '@ricochet/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { bearerTokenOf } from '../admin/http-access.js';
import { httpStatusOf } from '../admin/http-error.js';
import type { AccessControl } from '../auth/access-control.js';
import type { MessagingService } from '../engine/index.js';
import { CLOSE_CODES } from './close-codes.js';
import type { ConnectionLimits } from './connection-limits.js';
import { HttpFrameChannel } from './http-frame-channel.js';
import {
  type HttpFrameBody,
  type HttpFrameEntry,
  readJsonFrames,
  writeJsonFrames,
} from './http-frame-json.js';
import { Session } from './session.js';

/** Where request frames are POSTed (docs/protocol/transports.md#http). */
export const HTTP_FRAMES_PATH = '/v1/frames';

const MSGPACK = 'application/msgpack';
const JSON_TYPE = 'application/json';

/** Push consumption needs the broker to send unasked: a stream transport's job, not a request's. */
const STREAM_ONLY_TYPES: ReadonlySet<string> = new Set(['subscribe', 'unsubscribe', 'credit']);

export interface HttpFramesOptions {
  readonly engine: MessagingService;
  readonly access: AccessControl;
  readonly maxBodyBytes: number;
  readonly maxFrameBytes: number;
  readonly accepting: () => boolean;
  readonly limits: ConnectionLimits;
}

/** The sessions of requests in progress, for draining. */
export interface HttpFrames {
  readonly sessions: ReadonlySet<Session>;
}

type Format = 'msgpack' | 'json';
type ErrorFrame = Extract<BrokerFrame, { type: 'error' }>;

/**
 * Mount the HTTP transport: `POST /v1/frames` with one request frame or an array of them, in
 * MessagePack or JSON by content type, answered in kind with the broker's frames. Each request is
 * a short-lived session: the token of its `Authorization` header opens it like a `hello`, its
 * frames go through the WebSocket session's dispatch one after the other (so a `register` before
 * a `receive` in one request is in force for it), and the session ends with the response (a long
 * poll whose client went away ends with it).
 */
export async function registerHttpFrames(
  app: FastifyInstance,
  options: HttpFramesOptions,
): Promise<HttpFrames> {
  const sessions = new Set<Session>();
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      [MSGPACK, JSON_TYPE],
      { parseAs: 'buffer', bodyLimit: options.maxFrameBytes },
      (_request, body, done) => done(null, body),
    );
    scope.setErrorHandler((error: { statusCode?: number; message: string }, request, reply) => {
      const format = formatOf(request.headers['content-type']) ?? 'json';
      if (error.statusCode === 413) {
        return replyFailure(reply, format, 413, {
          code: ERROR_CODES.MESSAGE_TOO_LARGE.code,
          message: `the body is larger than maxFrameBytes (${options.maxFrameBytes} bytes)`,
        });
      }
      if (error.statusCode === 415) {
        return replyFailure(reply, 'json', 415, {
          code: ERROR_CODES.BAD_REQUEST.code,
          message: `send frames as ${MSGPACK} or ${JSON_TYPE}`,
        });
      }
      if (error.statusCode !== undefined && error.statusCode < 500) {
        return replyFailure(reply, format, 400, {
          code: ERROR_CODES.BAD_REQUEST.code,
          message: error.message,
        });
      }
      throw error;
    });
    scope.post(HTTP_FRAMES_PATH, {
      bodyLimit: options.maxFrameBytes,
      // The token is judged before the body is read: a stranger's body is never buffered.
      onRequest: async (request, reply) => {
        if (!options.access.enabled) return;
        const authn = options.access.authenticate(bearerTokenOf(request.headers.authorization), 'http');
        if (authn.ok) return;
        reply.header('www-authenticate', 'Bearer realm="ricochet"');
        options.engine.metrics.rejected(ERROR_CODES.UNAUTHORIZED.code);
        return replyFailure(reply, formatOf(request.headers['content-type']) ?? 'json', 401, {
          code: ERROR_CODES.UNAUTHORIZED.code,
          message: `${authn.message}: send Authorization: Bearer <token>`,
        });
      },
      handler: async (request, reply) => {
        const format = formatOf(request.headers['content-type']) ?? 'json';
        const body = request.body as Buffer;
        const read = format === 'json' ? readJsonFrames(body) : readMsgpackFrames(body);
        if (!read.ok) {
          options.engine.metrics.rejected(ERROR_CODES.BAD_REQUEST.code);
          return replyFailure(reply, format, 400, {
            code: ERROR_CODES.BAD_REQUEST.code,
            message: read.message,
          });
        }
        const channel = new HttpFrameChannel();
        const session = new Session(channel, {
          engine: options.engine,
          log: request.log,
          access: options.access,
          // The hello is handed over at once; the timer never runs out.
          helloTimeoutMs: 60_000,
          maxBodyBytes: options.maxBodyBytes,
          maxFrameBytes: options.maxFrameBytes,
          accepting: options.accepting,
          limits: options.limits,
        });
        sessions.add(session);
        // A client that hangs up ends its session: a long poll stops waiting for it.
        reply.raw.once('close', () => session.close(CLOSE_CODES.goingAway, 'client went away'));
        try {
          const answers = await exchangeAll(
            channel,
            read.entries,
            bearerTokenOf(request.headers.authorization),
          );
          return replyAnswers(reply, format, answers, read.isBatch);
        } finally {
          session.close(CLOSE_CODES.goingAway, 'request answered');
          sessions.delete(session);
        }
      },
    });
  });
  return { sessions };
}

type Answers = { readonly refused: Uint8Array } | { readonly frames: readonly Uint8Array[] };

/**
 * Open the session with a `hello` carrying the header's token (the request's own `hello`, if it
 * starts with one, with that token in place of its own), then hand it each frame and collect its
 * answer: one answer per frame, in order.
 */
async function exchangeAll(
  channel: HttpFrameChannel,
  entries: readonly HttpFrameEntry[],
  token: string | undefined,
): Promise<Answers> {
  const first = entries[0];
  const ownHello =
    first !== undefined && 'frame' in first && first.type === 'hello' ? first.frame : undefined;
  const welcome = await channel.exchange(helloOf(ownHello, token));
  if (welcome === undefined || peekFrameType(welcome) !== 'welcome') {
    return {
      refused: welcome ?? errorBytes(ERROR_CODES.BROKER_UNAVAILABLE.code, 'the broker is shutting down'),
    };
  }
  const frames: Uint8Array[] = ownHello === undefined ? [] : [welcome];
  for (const entry of ownHello === undefined ? entries : entries.slice(1)) {
    if ('refusal' in entry) {
      frames.push(errorBytes(ERROR_CODES.BAD_REQUEST.code, entry.refusal, entry.id));
      continue;
    }
    if (entry.type !== undefined && STREAM_ONLY_TYPES.has(entry.type)) {
      const id = decodeIdOf(entry.frame);
      frames.push(
        errorBytes(
          ERROR_CODES.BAD_REQUEST.code,
          `${entry.type} needs a stream: push consumption runs over ws:// or tcp://, not HTTP (use a simple consumer)`,
          id,
        ),
      );
      continue;
    }
    const answer = await channel.exchange(entry.frame);
    frames.push(answer ?? endedAnswer(channel.closeCode, decodeIdOf(entry.frame)));
  }
  return { frames };
}

function helloOf(ownHello: Uint8Array | undefined, token: string | undefined): Uint8Array {
  const decoded = ownHello === undefined ? undefined : decodeClientFrame(ownHello);
  // A hello that does not decode goes to the session as it is, to be refused there.
  if (ownHello !== undefined && (decoded === undefined || !decoded.ok)) return ownHello;
  const hello = decoded?.ok && decoded.frame.type === 'hello' ? decoded.frame : undefined;
  const { token: _ignored, ...rest } = hello ?? { type: 'hello' as const, protocolVersion: PROTOCOL_VERSION };
  return encodeFrame({ ...rest, ...(token === undefined ? {} : { token }) });
}

/** The answer to a frame the session ended before: a removed token (401) or a shutdown (503). */
function endedAnswer(closeCode: number | undefined, id: number | undefined): Uint8Array {
  return closeCode === CLOSE_CODES.policyViolation
    ? errorBytes(ERROR_CODES.UNAUTHORIZED.code, 'the token is no longer accepted', id)
    : errorBytes(ERROR_CODES.BROKER_UNAVAILABLE.code, 'the broker is shutting down', id);
}

function readMsgpackFrames(body: Buffer): HttpFrameBody {
  const split = splitFrameBatch(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  if (!split.ok) return split;
  return {
    ok: true,
    isBatch: split.isBatch,
    entries: split.frames.map((frame) => ({ frame, type: peekFrameType(frame) })),
  };
}

function decodeIdOf(frame: Uint8Array): number | undefined {
  const decoded = decodeClientFrame(frame);
  if (decoded.ok) return 'id' in decoded.frame ? decoded.frame.id : undefined;
  return decoded.error.id;
}

function errorBytes(code: number, message: string, id?: number): Uint8Array {
  return encodeFrame({ type: 'error', ...(id === undefined ? {} : { id }), code, message });
}

/**
 * The status of an answer: that of the error, for a request of one frame answered with one; 200
 * for a batch, whose frames carry their own codes (some may have been stored, others refused).
 */
function replyAnswers(reply: FastifyReply, format: Format, answers: Answers, isBatch: boolean): FastifyReply {
  if ('refused' in answers) {
    const refusal = decodeBrokerFrame(answers.refused);
    const frame = refusal.ok && refusal.frame.type === 'error' ? refusal.frame : undefined;
    const code = frame?.code ?? ERROR_CODES.INTERNAL_ERROR.code;
    if (code === ERROR_CODES.UNAUTHORIZED.code) reply.header('www-authenticate', 'Bearer realm="ricochet"');
    return replyFailure(
      reply,
      format,
      httpStatusOf(code),
      frame ?? { code, message: 'the session did not open' },
    );
  }
  let status = 200;
  if (!isBatch && answers.frames[0] !== undefined && peekFrameType(answers.frames[0]) === 'error') {
    const decoded = decodeBrokerFrame(answers.frames[0]);
    if (decoded.ok && decoded.frame.type === 'error') status = httpStatusOf(decoded.frame.code);
  }
  reply.code(status);
  if (format === 'msgpack') {
    return reply
      .type(MSGPACK)
      .send(Buffer.from(isBatch ? encodeFrameBatch(answers.frames) : (answers.frames[0] as Uint8Array)));
  }
  const frames = answers.frames.map((bytes) => {
    const decoded = decodeBrokerFrame(bytes);
    if (!decoded.ok) throw new Error(`the session sent an invalid frame: ${decoded.error.message}`);
    return decoded.frame;
  });
  return reply.type(JSON_TYPE).send(writeJsonFrames(frames, isBatch));
}

/** Answer the whole request with one error frame (it failed before any frame was handled). */
function replyFailure(
  reply: FastifyReply,
  format: Format,
  status: number,
  error: Omit<ErrorFrame, 'type'>,
): FastifyReply {
  const frame: ErrorFrame = { type: 'error', ...error };
  reply.code(status);
  if (format === 'msgpack') return reply.type(MSGPACK).send(Buffer.from(encodeFrame(frame)));
  return reply.type(JSON_TYPE).send(JSON.stringify(frame));
}

/** The frame format a content type names (parameters such as `charset` aside). */
function formatOf(contentType: string | undefined): Format | undefined {
  const type = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (type === MSGPACK) return 'msgpack';
  if (type === JSON_TYPE) return 'json';
  return undefined;
}
