import type { MessageView } from '@ricochet/protocol';
import { useEffect, useState } from 'preact/hooks';
import { api, segment } from '../api';
import { bestMode, decodeBase64, type PreviewMode, preview } from '../body-preview';
import { DeliveryHistory } from '../components/delivery-history';
import { formatTime } from '../format';
import { POLL_INTERVAL_MS } from '../live-data';
import { groupHref, overviewHref } from '../router';

/** One message: its body (text, JSON or hex), its properties, and its delivery history per group. */
export function MessagePage(props: { messageId: string }) {
  const [view, setView] = useState<MessageView | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [mode, setMode] = useState<PreviewMode | undefined>(undefined);

  // Read again every 2 s: a redriven message's history grows while the page is open.
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        const answer = await api<MessageView>('GET', `/v1/messages/${segment(props.messageId)}`);
        if (stopped) return;
        setView(answer);
        setError(undefined);
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
  }, [props.messageId]);

  if (error && !view)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!view) return null;
  const { message } = view;
  const bytes = decodeBase64(message.bodyBase64);
  const shownMode = mode ?? bestMode(bytes);
  const facts: [string, string | undefined][] = [
    ['topic', message.topic],
    ['offset', String(message.offset)],
    ['tag', message.tag],
    ['keys', message.keys?.join(', ')],
    ['message group', message.messageGroup],
    ['born at', formatTime(message.bornAt)],
    ['body', `${message.bodyBytes} bytes`],
  ];
  return (
    <section>
      <p>
        <a href={overviewHref}>← Overview</a>
      </p>
      <h1>
        Message <code>{message.messageId}</code>
      </h1>
      <dl class="facts">
        {facts
          .filter(([, value]) => value !== undefined && value !== '')
          .map(([name, value]) => (
            <div key={name}>
              <dt>{name}</dt>
              <dd>{value}</dd>
            </div>
          ))}
      </dl>
      <h2>Properties</h2>
      {message.properties && Object.keys(message.properties).length > 0 ? (
        <table class="data properties">
          <tbody>
            {Object.entries(message.properties).map(([key, value]) => (
              <tr key={key}>
                <th>{key}</th>
                <td>{value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">None.</p>
      )}
      <h2>Body</h2>
      <div class="actions">
        {(['json', 'text', 'hex'] as const).map((option) => (
          <button
            key={option}
            type="button"
            class={option === shownMode ? 'selected' : ''}
            onClick={() => setMode(option)}
          >
            {option}
          </button>
        ))}
      </div>
      <pre class="body" data-testid="body">
        {preview(bytes, shownMode)}
      </pre>
      <h2>Delivery history</h2>
      {view.groups.length === 0 ? <p class="muted">No group consumes this topic.</p> : null}
      {view.groups.map((group) => (
        <div key={`${group.group}/${group.instance ?? ''}`}>
          <DeliveryHistory view={group} />
          <p>
            <a href={groupHref(group.group)}>Group {group.group} →</a>
          </p>
        </div>
      ))}
    </section>
  );
}
