import type { GroupView } from '@ricochet/protocol';
import { useState } from 'preact/hooks';
import { api, segment } from '../api';
import { formatTime } from '../format';
import { formatDuration } from '../retry-schedule';

/** What the group does now, in a word: delivering, or held and why (DESIGN.md §11). */
function standing(pause: NonNullable<GroupView['pause']>): string {
  if (pause.manuallyPaused) return 'paused by hand';
  switch (pause.state) {
    case 'open':
      return 'held: breaker open';
    case 'halfOpen':
      return 'held: probing';
    default:
      return 'delivering';
  }
}

/**
 * The group's pause (DESIGN.md §11): whether it delivers, its failure-storm breaker's state, the
 * window's failure ratio and the time of the next probe, with Pause and Resume buttons that call
 * `POST /v1/groups/:group/pause` and `/resume`. The answer is the group, handed to `onChanged`.
 */
export function GroupPause(props: {
  group: GroupView;
  readOnly: boolean;
  onChanged: (group: GroupView) => void;
}) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const { pause, config } = props.group;
  if (!pause) return <p class="muted">This broker does not report pauses.</p>;
  const rule = config.pauseOnFailures;
  const held = pause.manuallyPaused || pause.state !== 'closed';

  const act = async (action: 'pause' | 'resume') => {
    setBusy(true);
    setError(undefined);
    try {
      props.onChanged(await api<GroupView>('POST', `/v1/groups/${segment(props.group.name)}/${action}`, {}));
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="group-pause" data-testid="group-pause" data-state={pause.state} data-paused={String(held)}>
      <dl class="facts">
        <div>
          <dt>deliveries</dt>
          <dd data-testid="pause-standing" class={held ? 'held' : 'ok'}>
            {standing(pause)}
          </dd>
        </div>
        <div>
          <dt>breaker</dt>
          <dd data-testid="breaker-state">{pause.state}</dd>
        </div>
        <div>
          <dt>failure ratio (window)</dt>
          <dd data-testid="failure-ratio">{rule ? `${Math.round(pause.failureRatio * 100)} %` : '-'}</dd>
        </div>
        <div>
          <dt>next probe</dt>
          <dd data-testid="next-probe">
            {pause.nextProbeAt === undefined ? '-' : formatTime(pause.nextProbeAt)}
          </dd>
        </div>
      </dl>
      <p class="muted">
        {rule
          ? `Failure-storm rule on: the group pauses itself at ${Math.round(rule.failureRatio * 100)} % failures of at least ${rule.minOutcomes} outcomes in ${formatDuration(rule.windowMs)}, and probes after ${formatDuration(rule.pauseMs)}, doubling up to ${formatDuration(rule.maxPauseMs)}.`
          : 'Failure-storm rule off (set pauseOnFailures in the config to turn it on); the group can still be paused by hand.'}
      </p>
      {props.readOnly ? null : (
        <div class="actions">
          <button type="button" disabled={busy || pause.manuallyPaused} onClick={() => act('pause')}>
            Pause
          </button>
          <button type="button" disabled={busy || !held} onClick={() => act('resume')}>
            Resume
          </button>
        </div>
      )}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}
