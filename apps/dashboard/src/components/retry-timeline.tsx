import type { RetryPolicy } from '@ricochet/core';
import { formatDuration, MAX_DRAWN_ATTEMPTS, retrySchedule } from '../retry-schedule';

/**
 * The group's retry schedule as a timeline: a mark for every delivery a failing message gets, at
 * the time it fires after the first, and the DLQ after the last. Time runs on a square-root scale,
 * so seconds-apart first retries and hours-apart last ones both stay readable.
 */
export function RetryTimeline(props: { policy: RetryPolicy; maxRetries: number }) {
  const attempts = retrySchedule(props.policy, props.maxRetries);
  const last = attempts.at(-1)?.atMs ?? 0;
  const width = 900;
  const height = 74;
  const left = 16;
  const right = width - 60;
  const x = (atMs: number) => left + (last === 0 ? 0 : Math.sqrt(atMs / last) * (right - left));
  const truncated = props.maxRetries + 1 > MAX_DRAWN_ATTEMPTS;
  return (
    <figure class="timeline">
      <svg
        class="timeline-svg"
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label="retry schedule"
      >
        <line class="timeline-axis" x1={left} y1={30} x2={right + 30} y2={30} />
        {attempts.map((attempt, index) => (
          <g key={attempt.attempt} data-attempt={attempt.attempt}>
            <circle
              class={attempt.attempt === 1 ? 'timeline-first' : 'timeline-retry'}
              cx={x(attempt.atMs)}
              cy={30}
              r={5}
            >
              <title>
                attempt {attempt.attempt} at +{formatDuration(attempt.atMs)}
                {attempt.delayMs > 0 ? ` (waits ${formatDuration(attempt.delayMs)})` : ''}
                {attempt.spreadMs > 0 ? ` ± ${formatDuration(attempt.spreadMs)}` : ''}
              </title>
            </circle>
            {index % 2 === 0 || attempts.length <= 10 ? (
              <text
                class="timeline-label"
                x={x(attempt.atMs)}
                y={index % 4 === 0 || attempts.length <= 10 ? 18 : 56}
                text-anchor="middle"
              >
                #{attempt.attempt}
              </text>
            ) : null}
          </g>
        ))}
        {truncated ? null : (
          <text class="timeline-dlq" x={right + 34} y={34}>
            DLQ
          </text>
        )}
        <text class="timeline-label" x={left} y={70}>
          first delivery
        </text>
        <text class="timeline-label" x={right} y={70} text-anchor="end">
          +{formatDuration(last)}
        </text>
      </svg>
      <figcaption class="muted">
        {props.maxRetries + 1} deliveries at most, then the DLQ.
        {truncated ? ` The first ${MAX_DRAWN_ATTEMPTS} are drawn.` : ''} Each retry waits from the failure
        before it; hover a mark for its time.
      </figcaption>
      <ol class="schedule" data-testid="retry-schedule">
        {attempts.map((attempt) => (
          <li key={attempt.attempt}>
            #{attempt.attempt} +{formatDuration(attempt.atMs)}
          </li>
        ))}
      </ol>
    </figure>
  );
}
