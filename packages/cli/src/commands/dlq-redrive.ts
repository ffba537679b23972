import { setTimeout as sleep } from 'node:timers/promises';
import type { DeadLetterEntry } from '@ricochet/protocol';
import { listDeadLetters } from '../admin-paging.js';
import { CliError } from '../cli-error.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { formatDurationMs } from '../display-format.js';
import { ProgressReporter } from '../progress-bar.js';
import { groupPath } from './groups.js';

/** The broker's default redrive rate (D2), used to tell how long a redrive should take. */
const BROKER_DEFAULT_RATE_PER_SECOND = 500;
/** The most ids one redrive request may name (the broker's limit). */
const MAX_IDS_PER_REQUEST = 10_000;
/** How long past its expected duration a redrive may take before the CLI gives up watching. */
const REDRIVE_SLACK_MS = 30_000;

export interface RedriveRequest {
  readonly group: string;
  /** Redrive every message in the DLQ now; otherwise those with these ids. */
  readonly all: boolean;
  readonly messageIds: readonly string[];
  readonly ratePerSecond: number | undefined;
  /** How often the DLQ is read for progress. @default 250 (ms) */
  readonly pollIntervalMs?: number;
}

/**
 * D2 with progress: find the messages to redrive in the group's DLQ, ask the broker to redrive
 * them, and watch the DLQ until none of them is left. `--all` means every message in the DLQ when
 * the command starts; one that fails into it afterwards is not waited for. Messages are followed by
 * their DLQ offset, not their id: a redriven message that fails again comes back with a new offset
 * and does not hold the progress back.
 */
export async function redriveDeadLetters(
  context: CommandContext,
  request: RedriveRequest,
): Promise<number | undefined> {
  const { admin, io } = context;
  const dlq = await listDeadLetters(admin, request.group);
  const wanted = new Set(request.messageIds);
  const targets = request.all ? dlq : dlq.filter((entry) => wanted.has(entry.messageId));
  const found = new Set(targets.map((entry) => entry.messageId));
  const notFound = request.messageIds.filter((id) => !found.has(id));
  if (targets.length === 0) {
    if (!request.all) {
      throw new CliError(
        'NOT_FOUND',
        `none of ${notFound.join(', ')} is in the DLQ of group ${request.group}`,
        {
          hint: `list it with \`ricochet dlq ls ${request.group}\``,
        },
      );
    }
    if (context.json) writeJson(context, { group: request.group, accepted: 0, redriven: 0, notFound: [] });
    else io.stdout.write(`the DLQ of group ${request.group} is empty: nothing to redrive\n`);
    return undefined;
  }

  const rate = request.ratePerSecond ?? BROKER_DEFAULT_RATE_PER_SECOND;
  if (!context.json) {
    io.stdout.write(
      `redriving ${targets.length} message(s) of %DLQ%${request.group} back to their topics, at most ${rate}/s\n`,
    );
  }
  const progress = new ProgressReporter(io.stderr, 'redrive', targets.length);
  progress.update(0);
  let accepted = 0;
  let redriven = 0;
  // One request at a time, each watched to its end: requests running together would add up rates.
  for (let start = 0; start < targets.length; start += MAX_IDS_PER_REQUEST) {
    const chunk = targets.slice(start, start + MAX_IDS_PER_REQUEST);
    const answer = await admin.call(
      'POST /v1/groups/:group/dlq/redrive',
      `${groupPath(request.group)}/dlq/redrive`,
      {
        messageIds: chunk.map((entry) => entry.messageId),
        ...(request.ratePerSecond === undefined ? {} : { ratePerSecond: request.ratePerSecond }),
      },
    );
    accepted += answer.accepted;
    const outcome = await watchUntilRedriven(context, request, chunk, rate, (doneInChunk) =>
      progress.update(redriven + doneInChunk),
    );
    redriven += outcome.redriven;
    if (outcome.stopped) break;
  }
  progress.finish();

  if (context.json) {
    writeJson(context, { group: request.group, accepted, redriven, notFound });
  } else if (redriven === targets.length) {
    io.stdout.write(
      `redriven ${redriven} message(s): group ${request.group} receives them again, from deliveryAttempt 1\n`,
    );
  } else {
    io.stdout.write(
      `stopped watching after ${redriven} of ${targets.length}; the broker carries on with the rest\n`,
    );
  }
  if (notFound.length > 0) {
    throw new CliError('NOT_FOUND', `not in the DLQ of group ${request.group}: ${notFound.join(', ')}`, {
      hint: 'the others were redriven; `ricochet messages get <id>` shows where a message is',
    });
  }
  return undefined;
}

/**
 * Poll the DLQ until none of `chunk` is left in it, reporting how many left so far.
 * @throws CliError FAILED when that takes well past what the rate allows.
 */
async function watchUntilRedriven(
  context: CommandContext,
  request: RedriveRequest,
  chunk: readonly DeadLetterEntry[],
  ratePerSecond: number,
  report: (done: number) => void,
): Promise<{ redriven: number; stopped: boolean }> {
  const offsets = new Set(chunk.map((entry) => entry.offset));
  const fromOffset = Math.min(...offsets);
  const budgetMs = Math.ceil((chunk.length / ratePerSecond) * 1_000) + REDRIVE_SLACK_MS;
  const startedAt = performance.now();
  const pollIntervalMs = request.pollIntervalMs ?? 250;
  for (;;) {
    const left = (await listDeadLetters(context.admin, request.group, { fromOffset })).filter((entry) =>
      offsets.has(entry.offset),
    ).length;
    report(chunk.length - left);
    if (left === 0) return { redriven: chunk.length, stopped: false };
    if (performance.now() - startedAt > budgetMs) {
      throw new CliError(
        'FAILED',
        `the redrive is not done after ${formatDurationMs(budgetMs)}: ${left} of ${chunk.length} message(s) still in the DLQ`,
        { hint: `check the broker's log, and \`ricochet dlq ls ${request.group}\`` },
      );
    }
    try {
      await sleep(pollIntervalMs, undefined, { signal: context.io.signal });
    } catch {
      return { redriven: chunk.length - left, stopped: true }; // Ctrl-C: stop watching
    }
  }
}
