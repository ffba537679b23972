import type { GroupConfig } from '@ricochet/core';
import type { GroupView } from '@ricochet/protocol';
import { useEffect, useState } from 'preact/hooks';
import { api, segment } from '../api';
import { ConfigEditor } from '../components/config-editor';
import { DeadLetters } from '../components/dead-letters';
import { FifoHeads } from '../components/fifo-heads';
import { GroupPause } from '../components/group-pause';
import { RetryTimeline } from '../components/retry-timeline';
import { formatCount } from '../format';
import { POLL_INTERVAL_MS } from '../live-data';
import { overviewHref } from '../router';
import { useAccess } from '../use-access';

/**
 * One group: its numbers, its pause (with Pause and Resume), its config (editable), its retry
 * schedule, its held FIFO message groups and its DLQ.
 */
export function GroupPage(props: { group: string }) {
  const access = useAccess();
  const [group, setGroup] = useState<GroupView | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [draft, setDraft] = useState<GroupConfig | undefined>(undefined);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        const view = await api<GroupView>('GET', `/v1/groups/${segment(props.group)}`);
        if (stopped) return;
        setGroup(view);
        setError(undefined);
        setTick((value) => value + 1);
      } catch (failure) {
        if (!stopped) setError(failure instanceof Error ? failure.message : String(failure));
      }
      if (!stopped) timer = setTimeout(read, POLL_INTERVAL_MS);
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [props.group]);

  if (error && !group) return <p class="error">{error}</p>;
  if (!group) return null;
  const shown = validPolicy(draft) ? draft : group.config;
  return (
    <section>
      <p>
        <a href={overviewHref}>← Overview</a>
      </p>
      <h1>
        Group <code>{group.name}</code>
        {group.config.fifo ? <span class="badge">FIFO</span> : null}
      </h1>
      <dl class="stats" data-testid="group-stats">
        {(['ready', 'inflight', 'waitingRetry', 'dlq', 'committed'] as const).map((key) => (
          <div key={key}>
            <dt>
              {key === 'ready'
                ? 'backlog'
                : key === 'waitingRetry'
                  ? 'waiting retry'
                  : key === 'dlq'
                    ? 'DLQ'
                    : key}
            </dt>
            <dd data-stat={key}>{formatCount(group.stats[key])}</dd>
          </div>
        ))}
      </dl>
      <h2>Pause</h2>
      <GroupPause group={group} readOnly={access.readOnly} onChanged={setGroup} />
      <h2>Delivery rate</h2>
      <p data-testid="delivery-rate">
        {group.config.maxDeliveriesPerSecond === undefined
          ? 'No limit (maxDeliveriesPerSecond unset)'
          : `At most ${formatCount(group.config.maxDeliveriesPerSecond)} deliveries per second, retries included`}
      </p>
      <h2>Config</h2>
      <ConfigEditor
        group={group}
        readOnly={access.readOnly}
        onSaved={(saved) => setGroup(saved)}
        onDraft={setDraft}
      />
      <h2>Retry schedule{shown !== group.config ? ' (draft)' : ''}</h2>
      <RetryTimeline policy={shown.retryPolicy} maxRetries={shown.maxRetries} />
      {group.config.fifo ? (
        <>
          <h2>Held message groups</h2>
          <FifoHeads group={group.name} refreshKey={tick} />
        </>
      ) : null}
      <h2>Dead-letter queue</h2>
      <DeadLetters
        group={group.name}
        dlqCount={group.stats.dlq}
        readOnly={access.readOnly}
        onRedrive={() => setTick((value) => value + 1)}
      />
    </section>
  );
}

/** Whether a draft config can be drawn: its retry policy has the fields the schedule needs. */
function validPolicy(config: GroupConfig | undefined): config is GroupConfig {
  if (!config || typeof config !== 'object' || !Number.isInteger(config.maxRetries) || config.maxRetries < 0)
    return false;
  const policy = config.retryPolicy as unknown as Record<string, unknown> | undefined;
  if (!policy) return false;
  const positive = (value: unknown) => typeof value === 'number' && value >= 0 && Number.isFinite(value);
  const fraction = (value: unknown) => typeof value === 'number' && value >= 0 && value < 1;
  // X3: stepped and fixed policies may have a jitter; the exponential shape must.
  const jitterOk = policy.jitter === undefined ? policy.type !== 'exponential' : fraction(policy.jitter);
  switch (policy.type) {
    case 'stepped':
      return (
        jitterOk &&
        Array.isArray(policy.delaysMs) &&
        policy.delaysMs.length > 0 &&
        policy.delaysMs.every(positive)
      );
    case 'fixed':
      return jitterOk && positive(policy.delayMs);
    case 'exponential':
      return (
        jitterOk &&
        positive(policy.initialMs) &&
        positive(policy.maxMs) &&
        typeof policy.multiplier === 'number' &&
        policy.multiplier >= 1
      );
    default:
      return false;
  }
}
