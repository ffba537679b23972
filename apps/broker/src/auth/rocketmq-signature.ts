/**
 * The `authorization` header of RocketMQ 5's gRPC requests, as Apache's clients write it:
 * `MQv2-HMAC-SHA1 Credential=<access key>, SignedHeaders=x-mq-date-time, Signature=<hex>`, the
 * signature an HMAC-SHA1 of the `x-mq-date-time` header (`20260309T195445Z`) under the secret key.
 */

/** A date-time further than this from the broker's clock is refused: a captured signature replays for no longer. */
export const MAX_SIGNATURE_SKEW_MS = 15 * 60 * 1_000;

export interface RocketSignedRequest {
  readonly accessKey: string;
  readonly signature: string;
  readonly dateTime: string;
}

export type RocketSignatureParse =
  | { readonly ok: true; readonly signed: RocketSignedRequest }
  | { readonly ok: false; readonly message: string };

const AUTHORIZATION =
  /^MQv2-HMAC-SHA1\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9A-Fa-f]+)$/;
const DATE_TIME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** Read the two headers; `undefined` when the request carries no `authorization` at all. */
export function parseRocketSignature(
  authorization: string | undefined,
  dateTime: string | undefined,
  nowMs: number,
): RocketSignatureParse | undefined {
  if (authorization === undefined || authorization === '') return undefined;
  const match = AUTHORIZATION.exec(authorization);
  if (match === null) return { ok: false, message: 'the authorization header is not MQv2-HMAC-SHA1' };
  const [, credential = '', signedHeaders = '', signature = ''] = match;
  if (signedHeaders.toLowerCase() !== 'x-mq-date-time') {
    return { ok: false, message: 'the signature must cover x-mq-date-time' };
  }
  // The Java client writes `Credential=<access key>/<region>/<service>` in some versions.
  const accessKey = credential.split('/')[0] ?? '';
  const atMs = dateTime === undefined ? undefined : dateTimeMs(dateTime);
  if (dateTime === undefined || atMs === undefined)
    return { ok: false, message: 'x-mq-date-time is missing or malformed' };
  if (Math.abs(nowMs - atMs) > MAX_SIGNATURE_SKEW_MS) {
    return { ok: false, message: 'x-mq-date-time is more than 15 minutes from the broker’s clock' };
  }
  return { ok: true, signed: { accessKey, signature, dateTime } };
}

/** Milliseconds of `yyyyMMdd'T'HHmmss'Z'`, or `undefined`. */
export function dateTimeMs(dateTime: string): number | undefined {
  const match = DATE_TIME.exec(dateTime);
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second] = match.map(Number);
  const ms = Date.UTC(year ?? 0, (month ?? 1) - 1, day, hour, minute, second);
  return Number.isNaN(ms) ? undefined : ms;
}
