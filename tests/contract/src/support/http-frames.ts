import {
  type BrokerFrame,
  type ClientFrame,
  decodeBrokerFrame,
  encodeFrame,
  encodeFrameBatch,
  splitFrameBatch,
} from '@ricochet/protocol';

/** The HTTP transport's URL on a broker whose endpoint is `ws://host:port`. */
export function framesUrl(endpoint: string): string {
  return `${endpoint.replace(/^ws/, 'http')}/v1/frames`;
}

export interface FramesAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** The broker frames of the answer, one per request frame (or the one error of a refusal). */
  readonly frames: BrokerFrame[];
}

/** POST frames as MessagePack (one frame, or an array when `frames` is an array) and decode the answer. */
export async function postFrames(
  endpoint: string,
  frames: ClientFrame | readonly ClientFrame[],
  options: { readonly token?: string } = {},
): Promise<FramesAnswer> {
  const body = Array.isArray(frames)
    ? encodeFrameBatch(frames.map((frame) => encodeFrame(frame)))
    : encodeFrame(frames as ClientFrame);
  return postBytes(endpoint, body, { ...options, contentType: 'application/msgpack' });
}

/** POST raw bytes with any content type; the answer decoded as MessagePack frames. */
export async function postBytes(
  endpoint: string,
  body: Uint8Array | string,
  options: { readonly token?: string; readonly contentType?: string } = {},
): Promise<FramesAnswer> {
  const response = await fetch(framesUrl(endpoint), {
    method: 'POST',
    headers: {
      ...(options.contentType === undefined ? {} : { 'content-type': options.contentType }),
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
    },
    body,
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  let decoded: BrokerFrame[];
  if (type.startsWith('application/json')) {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as BrokerFrame | BrokerFrame[];
    decoded = Array.isArray(value) ? value : [value];
  } else {
    const split = splitFrameBatch(bytes);
    if (!split.ok) throw new Error(`the broker answered no frames: ${split.message}`);
    decoded = split.frames.map((frame) => {
      const result = decodeBrokerFrame(frame);
      if (!result.ok) throw new Error(`the broker answered an invalid frame: ${result.error.message}`);
      return result.frame;
    });
  }
  return { status: response.status, headers: response.headers, frames: decoded };
}

/** A `send` frame of one message with a UTF-8 body. */
export function sendFrame(
  id: number,
  topic: string,
  body: string,
  messageId = `http-${id}-${topic}`,
): ClientFrame {
  return {
    type: 'send',
    id,
    messages: [{ messageId, topic, body: new TextEncoder().encode(body), bornAt: Date.now() }],
  };
}
