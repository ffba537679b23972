import type { GroupView, MessageGroupView, TopicView } from '@ricochet/broker';

export type { GroupView, MessageGroupView, TopicView };

/** A message as `GET /v1/messages/:messageId` shows it: its metadata, and its body in base64. */
export interface MessageMeta {
  readonly messageId: string;
  readonly topic: string;
  readonly offset: number;
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageGroup?: string;
  readonly properties?: Readonly<Record<string, string>>;
  /** When the producer made it (the producer's clock, not the virtual one). */
  readonly bornAt: number;
  /** When the broker stored it, on the virtual clock. */
  readonly storedAt: number;
  /** A delay message: not delivered before this virtual time (T1). */
  readonly deliverAt?: number;
  readonly bodyBytes: number;
  readonly bodyBase64: string;
}

/** `GET /v1/messages/:messageId`: the message, and where it stands in every group that reads its topic. */
export interface MessageView {
  readonly message: MessageMeta;
  readonly groups: readonly MessageGroupView[];
}

/** One message of a group's DLQ, `%DLQ%<group>` (D1), as `GET /v1/groups/:group/dlq` lists it. */
export interface DlqEntry {
  /** The message id, the same as before it was dead-lettered. */
  readonly messageId: string;
  /** Its offset in the DLQ topic. */
  readonly offset: number;
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageGroup?: string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly bornAt: number;
  readonly originTopic: string;
  readonly originOffset: number;
  /** Deliveries that counted toward `maxRetries`. */
  readonly attempts: number;
  /** The last failure's reason (`the listener returned FAILURE`, a thrown error's message …). */
  readonly reason: string;
  /** When it moved to the DLQ, on the virtual clock. */
  readonly deadLetteredAt: number;
  readonly bodyBytes: number;
  readonly bodyBase64: string;
}
