import type { FifoHeadsAnswer, FifoHeadView } from '@ricochet/protocol';
import { useEffect, useState } from 'preact/hooks';
import { api, segment } from '../api';
import { formatTime } from '../format';
import { messageHref } from '../router';

/**
 * P5: the message groups a head message holds now. A head waiting for its retry (or past its
 * first attempt) is what blocks a FIFO message group; those are listed first.
 */
export function FifoHeads(props: { group: string; refreshKey: number }) {
  const [heads, setHeads] = useState<readonly FifoHeadView[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    api<FifoHeadsAnswer>('GET', `/v1/groups/${segment(props.group)}/fifo?limit=100`).then(
      (answer) => {
        setHeads(
          [...answer.messageGroups].sort((a, b) => (b.deliveryAttempt ?? 0) - (a.deliveryAttempt ?? 0)),
        );
        setError(undefined);
      },
      (failure: unknown) => setError(failure instanceof Error ? failure.message : String(failure)),
    );
  }, [props.group, props.refreshKey]);
  if (error) return <p class="error">{error}</p>;
  if (!heads) return null;
  if (heads.length === 0) return <p class="muted">No message group is held: every one is flowing.</p>;
  return (
    <table class="data" data-testid="fifo-heads">
      <thead>
        <tr>
          <th>topic</th>
          <th>message group</th>
          <th>head message</th>
          <th>state</th>
          <th class="num">attempt</th>
          <th>next retry</th>
        </tr>
      </thead>
      <tbody>
        {heads.map((head) => (
          <tr
            key={`${head.topic}/${head.messageGroup}`}
            class={(head.deliveryAttempt ?? 1) > 1 ? 'warn' : ''}
          >
            <td>{head.topic}</td>
            <td>{head.messageGroup}</td>
            <td>
              {head.messageId ? (
                <a href={messageHref(head.messageId)}>
                  <code>{head.messageId}</code>
                </a>
              ) : (
                `offset ${head.offset}`
              )}
            </td>
            <td>{head.state}</td>
            <td class="num">{head.deliveryAttempt ?? ''}</td>
            <td>{head.retryAtMs === undefined ? '' : formatTime(head.retryAtMs)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
