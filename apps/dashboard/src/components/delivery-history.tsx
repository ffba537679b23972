import type { MessageGroupView } from '@ricochet/protocol';
import { formatTime } from '../format';
import { formatDuration } from '../retry-schedule';

/**
 * Where a message stands in one group, and every delivery it had there as a timeline: attempt,
 * when it was delivered and settled, to which consumer, the result and the reason; and where a
 * retry waited for its paused group, when it fell due.
 */
export function DeliveryHistory(props: { view: MessageGroupView }) {
  const { view } = props;
  return (
    <div class="history" data-group={view.group}>
      <h3>
        {view.group}
        {view.instance ? <span class="muted"> · instance {view.instance}</span> : null}{' '}
        <span class={`state state-${view.state}`} data-testid="state">
          {view.state}
        </span>
        {view.deliveryAttempt ? <span class="muted"> · attempt {view.deliveryAttempt}</span> : null}
      </h3>
      {view.history.length === 0 ? (
        <p class="muted">
          {view.state === 'committed'
            ? // A group keeping failures only (its `history`) records no entry for a success.
              'Consumed with no failed delivery: this group’s history keeps failures only.'
            : 'Not delivered to this group yet.'}
        </p>
      ) : (
        <ol class="timeline-list">
          {view.history.map((entry) => (
            <li
              key={`${entry.deliveryAttempt}-${entry.deliveredAt}-${entry.settledAt}`}
              class={`result-${entry.result}`}
              data-result={entry.result}
            >
              <span class="when">{formatTime(entry.deliveredAt)}</span>
              {entry.result === 'held' ? (
                // A retry that fell due while the group was paused, and waited: no delivery (DESIGN.md §11).
                <span class="what">
                  attempt {entry.deliveryAttempt} <strong>held</strong>: due, but the group was paused
                </span>
              ) : (
                <>
                  <span class="what">
                    attempt {entry.deliveryAttempt} → <strong>{entry.result}</strong> after{' '}
                    {formatDuration(Math.max(0, entry.settledAt - entry.deliveredAt))}
                  </span>
                  <span class="who">
                    {entry.consumer} consumer{entry.consumerId ? ` ${entry.consumerId}` : ''}
                  </span>
                </>
              )}
              {entry.reason ? <span class="reason">{entry.reason}</span> : null}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
