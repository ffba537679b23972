import type { SendFrame } from '@ricochet/protocol';
import type { FakeBroker } from './fake-broker.js';

/** What a send test decides for one message: a refusal (`code`, `message`), or `undefined` to store it. */
export type SendRefusal = { readonly code: number; readonly message: string } | undefined;

/**
 * Answer each message of every `send` frame with its own receipt: a refusal when `decide` returns
 * one for the message's `attempt` (1 on its first frame), else the fake's stored receipt (R3).
 */
export function answerEachMessage(
  fake: FakeBroker,
  decide: (messageId: string, attempt: number) => SendRefusal,
): void {
  const attempts = new Map<string, number>();
  fake.on('send', (frame, session) => {
    session.send({
      type: 'sendResult',
      id: frame.id,
      receipts: frame.messages.map((message) => {
        const attempt = (attempts.get(message.messageId) ?? 0) + 1;
        attempts.set(message.messageId, attempt);
        const error = decide(message.messageId, attempt);
        return error === undefined
          ? fake.store(message.messageId)
          : { ok: false as const, messageId: message.messageId, error };
      }),
    });
  });
}

/**
 * Hold every `send` frame's answer (each message stored, with its receipt) until the test calls
 * its release: the returned list gets one release per frame, in arrival order.
 */
export function holdSendAnswers(fake: FakeBroker): Array<() => void> {
  const releases: Array<() => void> = [];
  fake.on('send', (frame, session) => {
    releases.push(() =>
      session.send({
        type: 'sendResult',
        id: frame.id,
        receipts: frame.messages.map((message) => fake.store(message.messageId)),
      }),
    );
  });
  return releases;
}

/** The message ids of each `send` frame, frame by frame. */
export function messageIdsByFrame(frames: readonly SendFrame[]): string[][] {
  return frames.map((frame) => frame.messages.map((message) => message.messageId));
}
