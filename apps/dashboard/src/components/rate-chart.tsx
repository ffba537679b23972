import { formatRate, HISTORY_MS, type RatePoint } from '../rates';
import { formatDuration } from '../retry-schedule';

/** The narrowest time span drawn: a page opened a few seconds ago still shows a readable line. */
const MIN_WINDOW_MS = 60_000;

export interface ChartSeries {
  readonly label: string;
  /** A CSS class of styles.css: `series-sent`, `series-acked`, … */
  readonly className: string;
  readonly points: readonly RatePoint[];
}

/**
 * The last 15 minutes of some rates as an inline SVG: one line per series, time on x (now at the
 * right edge; while the page has less history than that, the span it has, from 1 minute), per
 * second on y from 0 to the highest point. `compact` draws a table-cell sparkline
 * without legend or labels.
 */
export function RateChart(props: {
  series: readonly ChartSeries[];
  nowMs: number;
  width?: number;
  height?: number;
  compact?: boolean;
}) {
  const width = props.width ?? 600;
  const height = props.height ?? 120;
  const pad = props.compact ? 1 : 4;
  const oldest = Math.min(...props.series.map((series) => series.points[0]?.atMs ?? props.nowMs));
  const windowMs = Math.min(HISTORY_MS, Math.max(MIN_WINDOW_MS, props.nowMs - oldest));
  const max = Math.max(1, ...props.series.flatMap((series) => series.points.map((point) => point.perSecond)));
  const x = (atMs: number) => pad + ((atMs - (props.nowMs - windowMs)) / windowMs) * (width - 2 * pad);
  const y = (perSecond: number) => height - pad - (perSecond / max) * (height - 2 * pad);
  return (
    <figure class={props.compact ? 'chart compact' : 'chart'}>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={props.series.map((s) => s.label).join(', ')}
      >
        <rect class="chart-frame" x="0.5" y="0.5" width={width - 1} height={height - 1} />
        {props.series.map((series) => (
          <polyline
            key={series.label}
            class={`chart-line ${series.className}`}
            points={series.points
              .filter((point) => point.atMs >= props.nowMs - windowMs)
              .map((point) => `${x(point.atMs).toFixed(1)},${y(point.perSecond).toFixed(1)}`)
              .join(' ')}
          />
        ))}
        {props.compact ? null : (
          <>
            <text class="chart-label" x={pad + 2} y={pad + 10}>
              {formatRate(max)}/s
            </text>
            <text class="chart-label" x={pad + 2} y={height - pad - 2}>
              −{formatDuration(Math.round(windowMs / 1_000) * 1_000)}
            </text>
            <text class="chart-label" x={width - pad - 2} y={height - pad - 2} text-anchor="end">
              now
            </text>
          </>
        )}
      </svg>
      {props.compact ? null : (
        <figcaption class="legend">
          {props.series.map((series) => (
            <span key={series.label} class={`legend-item ${series.className}`}>
              {series.label} {formatRate(series.points.at(-1)?.perSecond)}/s
            </span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}
