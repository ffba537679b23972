import type { StoredMessage } from '../store/records.js';

/**
 * What the engine tells whoever listens (X7): the engine emits, the admin API's event stream
 * (`admin/event-stream.ts`) fans out to its listeners. The engine owns this interface so that it
 * never imports anything above it, and never waits for a listener: {@link EngineEventSink} must
 * return at once.
 */
export type EngineEvent =
  /** A message moved to its group's DLQ (D1): its copy there, as the DLQ listing shows it. */
  | {
      readonly type: 'dead_lettered';
      readonly group: string;
      readonly atMs: number;
      readonly copy: StoredMessage;
    }
  /** The group began to hold its deliveries: paused by hand, or its failure-storm breaker opened. */
  | {
      readonly type: 'group_paused' | 'group_resumed';
      readonly group: string;
      readonly atMs: number;
      readonly cause: 'manual' | 'failures';
      /** Why, in words: `paused by hand`, `failure-storm breaker closed → open`, … */
      readonly why: string;
    }
  /** A redrive (D2) moved another slice of the DLQ back: how many of how many so far. */
  | {
      readonly type: 'redrive_progress';
      readonly group: string;
      readonly atMs: number;
      readonly redriven: number;
      readonly total: number;
    };

/** Where the engine sends its events; called synchronously, and must never block or throw. */
export type EngineEventSink = (event: EngineEvent) => void;
