import type { DeadLetterPage, RedriveAnswer } from '@ricochet/protocol';
import { useEffect, useState } from 'preact/hooks';
import { api, segment } from '../api';
import { formatTime } from '../format';
import { messageHref } from '../router';

const PAGE_SIZE = 20;

/** A redrive the broker accepted, followed through the group's DLQ count until it is done. */
interface RedriveProgress {
  readonly accepted: number;
  readonly dlqAtStart: number;
  readonly ratePerSecond: number;
}

/**
 * The group's DLQ as a paged list, with a redrive of the chosen messages or all of them at a rate.
 * The broker redrives in the background; progress is how far the group's DLQ count has come down.
 */
export function DeadLetters(props: {
  group: string;
  dlqCount: number;
  readOnly: boolean;
  onRedrive: () => void;
}) {
  const [cursors, setCursors] = useState<number[]>([0]);
  const [page, setPage] = useState<DeadLetterPage | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set());
  const [rate, setRate] = useState(100);
  const [progress, setProgress] = useState<RedriveProgress | undefined>(undefined);
  const cursor = cursors.at(-1) ?? 0;

  const load = async () => {
    try {
      setPage(
        await api<DeadLetterPage>(
          'GET',
          `/v1/groups/${segment(props.group)}/dlq?cursor=${cursor}&limit=${PAGE_SIZE}`,
        ),
      );
      setError(undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };
  // Reload when the page changes or the DLQ count does (new dead letters, a redrive moving on).
  useEffect(() => {
    void load();
  }, [props.group, cursor, props.dlqCount]);

  const redriven = progress
    ? Math.min(progress.accepted, Math.max(0, progress.dlqAtStart - props.dlqCount))
    : 0;
  const done = progress !== undefined && redriven >= progress.accepted;

  const redrive = async (messageIds: readonly string[] | undefined) => {
    setError(undefined);
    try {
      const { accepted } = await api<RedriveAnswer>(
        'POST',
        `/v1/groups/${segment(props.group)}/dlq/redrive`,
        {
          ...(messageIds === undefined ? {} : { messageIds }),
          ratePerSecond: rate,
        },
      );
      setProgress({ accepted, dlqAtStart: props.dlqCount, ratePerSecond: rate });
      setChosen(new Set());
      props.onRedrive();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };

  const toggle = (messageId: string) => {
    const next = new Set(chosen);
    if (next.has(messageId)) next.delete(messageId);
    else next.add(messageId);
    setChosen(next);
  };

  return (
    <div class="dead-letters">
      {props.readOnly ? null : (
        <div class="actions redrive">
          <label>
            rate{' '}
            <input
              type="number"
              name="rate"
              min={1}
              max={100000}
              value={rate}
              onInput={(event) => setRate(Number(event.currentTarget.value) || 1)}
            />{' '}
            /s
          </label>
          <button type="button" disabled={chosen.size === 0} onClick={() => redrive([...chosen])}>
            Redrive {chosen.size} chosen
          </button>
          <button type="button" disabled={props.dlqCount === 0} onClick={() => redrive(undefined)}>
            Redrive all
          </button>
        </div>
      )}
      {progress ? (
        <div class="progress" data-testid="redrive-progress" data-done={done}>
          <progress max={Math.max(1, progress.accepted)} value={redriven} />
          <span>
            {done
              ? `Redrive done: ${progress.accepted} message${progress.accepted === 1 ? '' : 's'} back in their topic for this group.`
              : `Redriving ${redriven} / ${progress.accepted} at ${progress.ratePerSecond}/s…`}
          </span>
        </div>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
      <table class="data" data-testid="dlq">
        <thead>
          <tr>
            {props.readOnly ? null : <th />}
            <th>message id</th>
            <th>origin topic</th>
            <th class="num">attempts</th>
            <th>cause</th>
            <th>reason</th>
            <th>first failed at</th>
            <th>dead-lettered at</th>
            <th class="num">bytes</th>
          </tr>
        </thead>
        <tbody>
          {(page?.messages ?? []).map((message) => (
            <tr key={message.messageId} data-message-id={message.messageId}>
              {props.readOnly ? null : (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`choose ${message.messageId}`}
                    checked={chosen.has(message.messageId)}
                    onChange={() => toggle(message.messageId)}
                  />
                </td>
              )}
              <td>
                <a href={messageHref(message.messageId)}>
                  <code>{message.messageId}</code>
                </a>
              </td>
              <td>{message.originTopic}</td>
              <td class="num">{message.attempts}</td>
              <td>
                <code>{message.cause ?? '-'}</code>
              </td>
              <td class="reason">{message.reason}</td>
              <td>{message.firstFailedAt === undefined ? '' : formatTime(message.firstFailedAt)}</td>
              <td>{message.deadLetteredAt === undefined ? '' : formatTime(message.deadLetteredAt)}</td>
              <td class="num">{message.bodyBytes}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page && page.messages.length === 0 ? <p class="muted">The DLQ is empty.</p> : null}
      <div class="actions pager">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Previous
        </button>
        <button
          type="button"
          disabled={!page || page.cursor === null}
          onClick={() => page?.cursor != null && setCursors([...cursors, page.cursor])}
        >
          Next →
        </button>
      </div>
    </div>
  );
}
