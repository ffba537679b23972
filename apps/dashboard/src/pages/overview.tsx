import { useEffect, useState } from 'preact/hooks';
import { RateChart } from '../components/rate-chart';
import { formatCount } from '../format';
import { type LiveSnapshot, watchLive } from '../live-data';
import { formatRate } from '../rates';
import { groupHref, messageHref } from '../router';

/** Topics and groups with their rates and counts, read every 2 s, with 15 minutes of charts. */
export function OverviewPage() {
  const [live, setLive] = useState<LiveSnapshot | undefined>(undefined);
  useEffect(() => watchLive(setLive), []);
  if (!live) return null;
  const nowMs = live.updatedAtMs ?? Date.now();
  const total = live.totalRates;
  return (
    <section>
      <h1>Overview</h1>
      {live.error ? <p class="error">Cannot read the broker: {live.error}</p> : null}
      <RateChart
        nowMs={nowMs}
        width={900}
        height={140}
        series={[
          { label: 'sent', className: 'series-sent', points: total.series('sent') },
          { label: 'delivered', className: 'series-delivered', points: total.series('delivered') },
          { label: 'acked', className: 'series-acked', points: total.series('acked') },
          { label: 'retried', className: 'series-retried', points: total.series('retried') },
          { label: 'dead-lettered', className: 'series-dlq', points: total.series('deadLettered') },
        ]}
      />
      <MessageFinder />
      <h2>Groups</h2>
      <table class="data" data-testid="groups">
        <thead>
          <tr>
            <th>group</th>
            <th class="num">delivered/s</th>
            <th class="num">acked/s</th>
            <th class="num">retried/s</th>
            <th class="num">dead-lettered/s</th>
            <th class="num">backlog</th>
            <th class="num">inflight</th>
            <th class="num">waiting retry</th>
            <th class="num">DLQ</th>
            <th>recent rates</th>
          </tr>
        </thead>
        <tbody>
          {live.groups.map((group) => {
            const rates = live.groupRates.get(group.name);
            return (
              <tr key={group.name} data-group={group.name}>
                <td>
                  <a href={groupHref(group.name)}>{group.name}</a>
                  {group.config.fifo ? <span class="badge">FIFO</span> : null}
                  {group.config.consumeMode === 'broadcasting' ? <span class="badge">broadcast</span> : null}
                </td>
                <td class="num">{formatRate(rates?.current('delivered'))}</td>
                <td class="num">{formatRate(rates?.current('acked'))}</td>
                <td class="num">{formatRate(rates?.current('retried'))}</td>
                <td class="num">{formatRate(rates?.current('deadLettered'))}</td>
                <td class="num">{formatCount(group.stats.ready)}</td>
                <td class="num">{formatCount(group.stats.inflight)}</td>
                <td class="num">{formatCount(group.stats.waitingRetry)}</td>
                <td class={group.stats.dlq > 0 ? 'num warn' : 'num'} data-testid="dlq-count">
                  {formatCount(group.stats.dlq)}
                </td>
                <td>
                  <RateChart
                    compact
                    width={140}
                    height={28}
                    nowMs={nowMs}
                    series={[
                      {
                        label: 'delivered',
                        className: 'series-delivered',
                        points: rates?.series('delivered') ?? [],
                      },
                      { label: 'acked', className: 'series-acked', points: rates?.series('acked') ?? [] },
                    ]}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {live.groups.length === 0 ? <p class="muted">No groups yet.</p> : null}
      <h2>Topics</h2>
      <table class="data" data-testid="topics">
        <thead>
          <tr>
            <th>topic</th>
            <th>type</th>
            <th class="num">sent/s</th>
            <th class="num">messages</th>
            <th>recent rates</th>
          </tr>
        </thead>
        <tbody>
          {live.topics.map((topic) => {
            const rates = live.topicRates.get(topic.name);
            return (
              <tr key={topic.name} data-topic={topic.name}>
                <td>{topic.name}</td>
                <td>{topic.config.type}</td>
                <td class="num">{formatRate(rates?.current('sent'))}</td>
                <td class="num" data-testid="messages">
                  {formatCount(topic.stats.messages)}
                </td>
                <td>
                  <RateChart
                    compact
                    width={140}
                    height={28}
                    nowMs={nowMs}
                    series={[
                      { label: 'sent', className: 'series-sent', points: rates?.series('sent') ?? [] },
                    ]}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {live.topics.length === 0 ? <p class="muted">No topics yet.</p> : null}
    </section>
  );
}

/** Go to a message by its id (from a log line, a DLQ alert, a consumer's error). */
function MessageFinder() {
  const [id, setId] = useState('');
  return (
    <form
      class="finder"
      onSubmit={(event) => {
        event.preventDefault();
        if (id.trim()) location.hash = messageHref(id.trim());
      }}
    >
      <label>
        Message id{' '}
        <input name="messageId" value={id} onInput={(event) => setId(event.currentTarget.value)} size={36} />
      </label>
      <button type="submit">Show</button>
    </form>
  );
}
