import type { Socket } from 'node:net';
import { FRAME_TYPE, type Frame, FrameReader, LARGEST_MAX_FRAME_BYTES } from './http2-frames.js';

/**
 * Every frame the server sends on `socket`, as it arrives (the tests read the server's side of a
 * raw client's connection with the reader the server itself reads with).
 */
export function collectFrames(socket: Socket): Frame[] {
  const frames: Frame[] = [];
  const reader = new FrameReader(LARGEST_MAX_FRAME_BYTES);
  socket.on('data', (chunk: Buffer) => reader.push(chunk, (frame) => frames.push(frame)));
  return frames;
}

/** The code of the GOAWAY among `frames`, if the server sent one. */
export function goAwayCodeOf(frames: readonly Frame[]): number | undefined {
  return frames.find((frame) => frame.type === FRAME_TYPE.GOAWAY)?.payload.readUInt32BE(4);
}
