/**
 * The soak's accounting: what it observed during the run and read from the store after the last
 * kill, turned into the figures it prints and the verdict it exits with. Pure functions on plain
 * data, so a test can feed them a run that went wrong and see them say so.
 */

/** One stretch of time the broker was not serving: from the SIGKILL until the new process answered. */
export interface DownInterval {
  readonly fromMs: number;
  readonly toMs: number;
}

/** A message as the store holds it in a topic's log. */
export interface StoredEntry {
  readonly messageId: string;
  readonly offset: number;
}

/** A retry a push group asked for and then saw: the failure, its configured delay, the redelivery. */
export interface RetryObservation {
  /** When the listener returned FAILURE (the soak's clock, performance.now()). */
  readonly failedAtMs: number;
  /** The group's retry delay for that attempt. */
  readonly delayMs: number;
  /** When the next attempt reached the listener. */
  readonly redeliveredAtMs: number;
}

/** What one consumer group saw, and what the broker said about it after the drain. */
export interface GroupObservation {
  readonly name: string;
  /** Listener invocations (push) or received messages (simple), redeliveries included. */
  readonly deliveries: number;
  /** Every offset each message id was delivered at (normally one). */
  readonly offsetsById: ReadonlyMap<string, ReadonlySet<number>>;
  /** Deliveries the soak itself caused: listener failures (retries, DLQ moves) and redrives. */
  readonly requestedRedeliveries: number;
  /** The broker's stats for the group after the drain. */
  readonly stats: Readonly<Record<string, number | undefined>>;
}

/** Everything a soak run observed. */
export interface SoakObservations {
  /** `send` calls made. */
  readonly sent: number;
  /** Sends that resolved: message id → the offset the receipt named. */
  readonly acknowledged: ReadonlyMap<string, number>;
  /** The origin topic's log, read from the data directory after the final SIGKILL. */
  readonly stored: readonly StoredEntry[];
  /** Each dead-letter topic's log, read the same way, by topic name. */
  readonly deadLetterLogs: ReadonlyMap<string, readonly StoredEntry[]>;
  readonly groups: readonly GroupObservation[];
  readonly retries: readonly RetryObservation[];
  readonly downtime: readonly DownInterval[];
}

export interface GroupReport {
  readonly name: string;
  readonly committed: number;
  readonly deliveries: number;
  /** Distinct messages delivered. */
  readonly received: number;
  /** Deliveries beyond the first of each message. */
  readonly redelivered: number;
  /** Of those, the ones the soak caused on purpose (failures, redrives). */
  readonly requestedRedeliveries: number;
  /** Acknowledged messages the group never saw. */
  readonly neverReceived: readonly string[];
  /** Ready + inflight + waitingRetry + dlq left after the drain. */
  readonly leftOver: number;
}

export interface SoakReport {
  readonly sent: number;
  readonly acknowledged: number;
  /** Offsets in the origin topic's log. */
  readonly stored: number;
  /** Acknowledged ids the store does not hold at the offset their receipt named. */
  readonly lost: readonly string[];
  /**
   * Ids held at more than one offset of one topic's log, as `origin/<id>` or `<dlq topic>/<id>`
   * (no message of the soak is dead-lettered twice by one group: a redriven one succeeds).
   */
  readonly storedTwice: readonly string[];
  readonly groups: readonly GroupReport[];
  /**
   * Deliveries at an offset that does not hold their id on disk. The broker delivers a message as
   * soon as its write is queued, before the commit; a SIGKILL in between loses the send (never
   * acknowledged), the producer's retry stores it at a new offset, and a group that saw the first
   * sees the id at two offsets. At-least-once, not a loss: reported, not failed on.
   */
  readonly phantomDeliveries: number;
  readonly retriesMeasured: number;
  /** Retries whose lateness, downtime excluded, passed {@link LATE_RETRY_MS}. */
  readonly lateRetries: number;
  /**
   * Of those, the ones with a kill between failure and redelivery: after a restart the consumer
   * reconnects (backoff up to 200 ms) and resubscribes before it sees the retries that fell due.
   */
  readonly lateRetriesAcrossRestart: number;
  readonly retryLatenessP99Ms: number;
  readonly retryLatenessMaxMs: number;
  readonly kills: number;
  readonly downtimeMs: number;
}

/** A retry later than this, with the broker's downtime taken out, counts as late. */
export const LATE_RETRY_MS = 1_000;

/**
 * How much of [fromMs, toMs] the broker was down. A retry whose due time fell while it was down
 * fires on restart; that wait is the crash's, not the scheduler's.
 */
export function downtimeWithin(downtime: readonly DownInterval[], fromMs: number, toMs: number): number {
  let total = 0;
  for (const interval of downtime) {
    const overlap = Math.min(toMs, interval.toMs) - Math.max(fromMs, interval.fromMs);
    if (overlap > 0) total += overlap;
  }
  return total;
}

/**
 * A retry's lateness: when it arrived minus when it was due (failure + delay), minus the time the
 * broker was down in between. Negative when early (e.g. a failure lost in a crash, so the message
 * was released and delivered again at once).
 */
export function retryLateness(retry: RetryObservation, downtime: readonly DownInterval[]): number {
  const dueAtMs = retry.failedAtMs + retry.delayMs;
  return retry.redeliveredAtMs - dueAtMs - downtimeWithin(downtime, retry.failedAtMs, retry.redeliveredAtMs);
}

/** Message ids held at more than one offset of one log. */
export function idsStoredTwice(log: readonly StoredEntry[]): string[] {
  const offsetsById = new Map<string, number>();
  const twice = new Set<string>();
  for (const { messageId, offset } of log) {
    const seen = offsetsById.get(messageId);
    if (seen !== undefined && seen !== offset) twice.add(messageId);
    else offsetsById.set(messageId, offset);
  }
  return [...twice];
}

/** Acknowledged ids whose receipt's offset does not hold that id in the store. */
export function lostMessages(
  acknowledged: ReadonlyMap<string, number>,
  stored: readonly StoredEntry[],
): string[] {
  const idAtOffset = new Map<number, string>();
  for (const { messageId, offset } of stored) idAtOffset.set(offset, messageId);
  const lost: string[] = [];
  for (const [messageId, offset] of acknowledged) {
    if (idAtOffset.get(offset) !== messageId) lost.push(messageId);
  }
  return lost;
}

function groupReport(group: GroupObservation, acknowledged: ReadonlyMap<string, number>): GroupReport {
  const neverReceived: string[] = [];
  for (const messageId of acknowledged.keys()) {
    if (!group.offsetsById.has(messageId)) neverReceived.push(messageId);
  }
  const stat = (name: string) => group.stats[name] ?? 0;
  return {
    name: group.name,
    committed: stat('committed'),
    deliveries: group.deliveries,
    received: group.offsetsById.size,
    redelivered: group.deliveries - group.offsetsById.size,
    requestedRedeliveries: group.requestedRedeliveries,
    neverReceived,
    leftOver: stat('ready') + stat('inflight') + stat('waitingRetry') + stat('dlq'),
  };
}

/** The p-th percentile (0–100) by nearest rank; NaN for no values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Turn a run's observations into its figures. */
export function accountSoak(observations: SoakObservations): SoakReport {
  // Named `<topic>/<messageId>`, so that a report says which log holds the copies.
  const storedTwice = new Set(idsStoredTwice(observations.stored).map((id) => `origin/${id}`));
  for (const [topic, log] of observations.deadLetterLogs) {
    for (const messageId of idsStoredTwice(log)) storedTwice.add(`${topic}/${messageId}`);
  }
  const idAtOffset = new Map<number, string>();
  for (const { messageId, offset } of observations.stored) idAtOffset.set(offset, messageId);
  let phantomDeliveries = 0;
  for (const group of observations.groups) {
    for (const [messageId, offsets] of group.offsetsById) {
      const storedAt = [...offsets].filter((offset) => idAtOffset.get(offset) === messageId);
      // Two delivered offsets that both hold the id on disk: the second path to "stored twice".
      if (storedAt.length > 1) storedTwice.add(`origin/${messageId}`);
      phantomDeliveries += offsets.size - storedAt.length;
    }
  }
  const lateness = observations.retries
    .map((retry) => retryLateness(retry, observations.downtime))
    .sort((a, b) => a - b);
  const lateAcrossRestart = observations.retries.filter(
    (retry) =>
      retryLateness(retry, observations.downtime) > LATE_RETRY_MS &&
      observations.downtime.some(
        ({ fromMs }) => fromMs >= retry.failedAtMs && fromMs <= retry.redeliveredAtMs,
      ),
  ).length;
  return {
    sent: observations.sent,
    acknowledged: observations.acknowledged.size,
    stored: new Set(observations.stored.map(({ offset }) => offset)).size,
    lost: lostMessages(observations.acknowledged, observations.stored),
    storedTwice: [...storedTwice],
    groups: observations.groups.map((group) => groupReport(group, observations.acknowledged)),
    retriesMeasured: lateness.length,
    lateRetries: lateness.filter((ms) => ms > LATE_RETRY_MS).length,
    lateRetriesAcrossRestart: lateAcrossRestart,
    retryLatenessP99Ms: percentile(lateness, 99),
    retryLatenessMaxMs: lateness.at(-1) ?? Number.NaN,
    phantomDeliveries,
    kills: observations.downtime.length,
    downtimeMs: observations.downtime.reduce((sum, { fromMs, toMs }) => sum + (toMs - fromMs), 0),
  };
}

/**
 * What makes the run fail: a lost or twice-stored message, an acknowledged message a group never
 * saw, a group whose committed count is not the stored count, or work left after the drain. Late
 * retries are reported, not failed on: on a loaded machine they measure the machine too.
 */
export function soakFailures(report: SoakReport): string[] {
  const failures: string[] = [];
  const sample = (ids: readonly string[]) => ids.slice(0, 5).join(', ');
  if (report.lost.length > 0) failures.push(`${report.lost.length} lost: ${sample(report.lost)}`);
  if (report.storedTwice.length > 0)
    failures.push(`${report.storedTwice.length} stored twice: ${sample(report.storedTwice)}`);
  for (const group of report.groups) {
    if (group.neverReceived.length > 0)
      failures.push(
        `${group.name}: ${group.neverReceived.length} acknowledged but never received: ${sample(group.neverReceived)}`,
      );
    if (group.committed !== report.stored)
      failures.push(`${group.name}: committed ${group.committed} but ${report.stored} stored`);
    if (group.leftOver !== 0)
      failures.push(`${group.name}: ${group.leftOver} messages not settled after the drain`);
  }
  return failures;
}

/** The report as printed lines. */
export function formatSoakReport(report: SoakReport, seconds: number): string[] {
  const n = (value: number) => value.toLocaleString('en');
  const ms = (value: number) => (Number.isNaN(value) ? 'n/a' : `${value.toFixed(0)} ms`);
  return [
    `kill -9 soak: ${n(report.kills)} kills in ${seconds.toFixed(0)} s (broker down ${(report.downtimeMs / 1_000).toFixed(1)} s in all)`,
    `  sent ${n(report.sent)}   acknowledged ${n(report.acknowledged)}   stored ${n(report.stored)}   lost ${n(report.lost.length)}   stored twice ${n(report.storedTwice.length)}`,
    `  deliveries of a send the crash lost before its commit (retried by the producer at a new offset): ${n(report.phantomDeliveries)}`,
    ...report.groups.map(
      (group) =>
        `  group ${group.name.padEnd(12)} committed ${n(group.committed)} (stored ${n(report.stored)})   received ${n(group.received)} in ${n(group.deliveries)} deliveries   redelivered ${n(group.redelivered)} (${n(group.requestedRedeliveries)} asked for by failures and redrives)   never received ${n(group.neverReceived.length)}   left ${n(group.leftOver)}`,
    ),
    `  retries measured ${n(report.retriesMeasured)}   late by > ${LATE_RETRY_MS} ms ${n(report.lateRetries)} (${n(report.lateRetriesAcrossRestart)} of them across a restart)   lateness p99 ${ms(report.retryLatenessP99Ms)} max ${ms(report.retryLatenessMaxMs)} (downtime excluded)`,
  ];
}
