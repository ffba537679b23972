/** One slice of a run's timeline: what happened in it, and where things stood at its end. */
export interface TimelineSlice {
  /** The slice's end, from the consumer's start. */
  readonly atMs: number;
  /** Deliveries the listener failed, and succeeded, in the slice. */
  readonly failed: number;
  readonly succeeded: number;
  /** The group's breaker at the slice's end (DESIGN.md §11). */
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  /** Messages committed, and in the DLQ, at the slice's end. */
  readonly committed: number;
  readonly deadLettered: number;
}

/** One outage run: the rule off or on, and its timeline. */
export interface OutageRun {
  readonly ruleOn: boolean;
  readonly messages: number;
  readonly outageMs: number;
  readonly slices: readonly TimelineSlice[];
  /** Probes sent (breaker moves open → half-open). */
  readonly probes: number;
}

const WIDTH = 900;
const PANEL_HEIGHT = 250;
const LEFT = 66;
const RIGHT = 56;
const PLOT_TOP = 34;
const PLOT_HEIGHT = 150;
const STRIP_HEIGHT = 12;
const COLORS = {
  failed: '#e07b39',
  succeeded: '#3a9d5d',
  committed: '#1f6f3f',
  deadLettered: '#c0392b',
  outage: '#555',
  closed: '#e4e7ec',
  open: '#c0392b',
  halfOpen: '#f1c40f',
  axis: '#888',
  text: '#222',
} as const;

const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/**
 * The runs as one SVG, a panel each, on one time axis: per slice the deliveries that failed and
 * succeeded (bars, left axis), the messages committed and dead-lettered so far (lines, right axis,
 * 0 to every message), and under the plot the outage and the breaker's state. Hand-written SVG:
 * no dependency, and the file diffs as text.
 */
export function renderOutageSvg(runs: readonly OutageRun[]): string {
  const endMs = Math.max(...runs.flatMap((run) => run.slices.map((slice) => slice.atMs)));
  const maxBar = Math.max(
    1,
    ...runs.flatMap((run) => run.slices.map((slice) => slice.failed + slice.succeeded)),
  );
  const height = PANEL_HEIGHT * runs.length + 40;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<title>One outage with the failure-storm rule off and on: deliveries, breaker state and where the messages ended</title>',
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    ...runs.map((run, index) => panel(run, index * PANEL_HEIGHT, endMs, maxBar)),
    legend(PANEL_HEIGHT * runs.length + 14),
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}

function panel(run: OutageRun, top: number, endMs: number, maxBar: number): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (ms: number) => LEFT + (ms / endMs) * plotWidth;
  const plotTop = top + PLOT_TOP;
  const plotBottom = plotTop + PLOT_HEIGHT;
  const yBar = (count: number) => plotBottom - (count / maxBar) * PLOT_HEIGHT;
  const yMessages = (count: number) => plotBottom - (count / run.messages) * PLOT_HEIGHT;
  const out: string[] = [];
  const last = run.slices.at(-1);
  const deliveries = run.slices.reduce((sum, slice) => sum + slice.failed + slice.succeeded, 0);
  out.push(
    `<text x="${LEFT}" y="${top + 20}" font-size="14" font-weight="600" fill="${COLORS.text}">${esc(
      `Rule ${run.ruleOn ? 'on (pauseOnFailures: {})' : 'off'}: ${last?.deadLettered ?? 0} of ${run.messages} dead-lettered, ${last?.committed ?? 0} committed, ${deliveries} deliveries, ${run.probes} probes`,
    )}</text>`,
  );
  // Axes: deliveries per slice on the left, messages on the right, seconds below.
  out.push(
    `<line x1="${LEFT}" y1="${plotBottom}" x2="${WIDTH - RIGHT}" y2="${plotBottom}" stroke="${COLORS.axis}"/>`,
    `<text x="${LEFT - 6}" y="${plotTop + 4}" text-anchor="end" fill="${COLORS.axis}">${maxBar}</text>`,
    `<text x="${LEFT - 6}" y="${plotBottom}" text-anchor="end" fill="${COLORS.axis}">0</text>`,
    `<text x="${WIDTH - RIGHT + 6}" y="${plotTop + 4}" fill="${COLORS.axis}">${run.messages}</text>`,
    `<text x="${WIDTH - RIGHT + 6}" y="${plotBottom}" fill="${COLORS.axis}">0</text>`,
    `<text x="${LEFT - 6}" y="${plotTop - 6}" text-anchor="end" font-size="10" fill="${COLORS.axis}">deliveries</text>`,
    `<text x="${WIDTH - RIGHT + 6}" y="${plotTop - 6}" font-size="10" fill="${COLORS.axis}">messages</text>`,
  );
  const stepS = endMs > 40_000 ? 10 : 5;
  for (let s = 0; s * 1_000 <= endMs; s += stepS) {
    const tx = x(s * 1_000);
    out.push(
      `<line x1="${tx}" y1="${plotBottom}" x2="${tx}" y2="${plotBottom + 4}" stroke="${COLORS.axis}"/>`,
      `<text x="${tx}" y="${plotBottom + 2 * STRIP_HEIGHT + 30}" text-anchor="middle" fill="${COLORS.axis}">${s} s</text>`,
    );
  }
  // Bars: failed at the bottom, succeeded above.
  let previousMs = 0;
  for (const slice of run.slices) {
    const bx = x(previousMs) + 0.5;
    const bw = Math.max(0.5, x(slice.atMs) - x(previousMs) - 1);
    if (slice.failed > 0)
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${yBar(slice.failed).toFixed(1)}" width="${bw.toFixed(1)}" height="${(plotBottom - yBar(slice.failed)).toFixed(1)}" fill="${COLORS.failed}"/>`,
      );
    if (slice.succeeded > 0) {
      const yTop = yBar(slice.failed + slice.succeeded);
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${yTop.toFixed(1)}" width="${bw.toFixed(1)}" height="${(yBar(slice.failed) - yTop).toFixed(1)}" fill="${COLORS.succeeded}"/>`,
      );
    }
    previousMs = slice.atMs;
  }
  // Probes: deliveries in a slice that began with the breaker open.
  for (const [index, slice] of run.slices.entries()) {
    const before = run.slices[index - 1];
    if (before === undefined || before.breaker === 'closed' || slice.failed + slice.succeeded === 0) continue;
    const px = (x(before.atMs) + x(slice.atMs)) / 2;
    const py = yBar(slice.failed + slice.succeeded) - 6;
    out.push(
      `<text x="${px.toFixed(1)}" y="${py.toFixed(1)}" text-anchor="middle" font-size="10" fill="${COLORS.text}">probe</text>`,
    );
  }
  // Lines: where the messages are.
  for (const key of ['committed', 'deadLettered'] as const) {
    const points = [`${x(0).toFixed(1)},${yMessages(0).toFixed(1)}`];
    for (const slice of run.slices)
      points.push(`${x(slice.atMs).toFixed(1)},${yMessages(slice[key]).toFixed(1)}`);
    out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${COLORS[key]}" stroke-width="2"/>`);
  }
  // Strips: the outage, then the breaker's state slice by slice.
  const outageTop = plotBottom + 6;
  out.push(
    `<rect x="${x(0)}" y="${outageTop}" width="${(x(run.outageMs) - x(0)).toFixed(1)}" height="${STRIP_HEIGHT}" fill="${COLORS.outage}"/>`,
    `<text x="${LEFT - 6}" y="${outageTop + 10}" text-anchor="end" fill="${COLORS.axis}">outage</text>`,
  );
  const breakerTop = outageTop + STRIP_HEIGHT + 4;
  out.push(
    `<text x="${LEFT - 6}" y="${breakerTop + 10}" text-anchor="end" fill="${COLORS.axis}">breaker</text>`,
  );
  // One rectangle per stretch of the same state, so no seams show between slices.
  let stretchFromMs = 0;
  for (const [index, slice] of run.slices.entries()) {
    const next = run.slices[index + 1];
    if (next !== undefined && next.breaker === slice.breaker) continue;
    out.push(
      `<rect x="${x(stretchFromMs).toFixed(1)}" y="${breakerTop}" width="${(x(slice.atMs) - x(stretchFromMs)).toFixed(1)}" height="${STRIP_HEIGHT}" fill="${COLORS[slice.breaker]}"/>`,
    );
    stretchFromMs = slice.atMs;
  }
  return out.join('\n');
}

function legend(y: number): string {
  const items: [string, string, 'bar' | 'line'][] = [
    ['delivery failed', COLORS.failed, 'bar'],
    ['succeeded', COLORS.succeeded, 'bar'],
    ['committed', COLORS.committed, 'line'],
    ['dead-lettered', COLORS.deadLettered, 'line'],
    ['breaker closed', COLORS.closed, 'bar'],
    ['open', COLORS.open, 'bar'],
    ['half-open', COLORS.halfOpen, 'bar'],
  ];
  const out: string[] = [];
  let lx = LEFT;
  for (const [label, color, kind] of items) {
    out.push(
      kind === 'bar'
        ? `<rect x="${lx}" y="${y - 9}" width="12" height="10" fill="${color}"/>`
        : `<line x1="${lx}" y1="${y - 4}" x2="${lx + 12}" y2="${y - 4}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 16}" y="${y}" fill="${COLORS.text}">${esc(label)}</text>`,
    );
    lx += 28 + label.length * 6.5;
  }
  return out.join('\n');
}
