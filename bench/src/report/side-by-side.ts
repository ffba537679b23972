/** The systems a bench run can measure, in the order the table shows them. */
export const SYSTEMS = ['ricochet', 'reference', 'jetstream', 'rabbitmq'] as const;
export type SystemName = (typeof SYSTEMS)[number];

export const SYSTEM_LABELS: Readonly<Record<SystemName, string>> = {
  ricochet: 'ricochet',
  reference: 'reference',
  jetstream: 'JetStream',
  rabbitmq: 'RabbitMQ QQ',
};

/**
 * What one system gave for one run of a workload: its figures by name (`rate`, `p99Ms`…), or why
 * it has none: `unavailable` (the peer could not be had or failed) or `notApplicable` (it has no
 * equivalent of the workload). Either way the table says so: no peer is dropped silently.
 */
export type Outcome =
  | { readonly figures: Readonly<Record<string, number>> }
  | { readonly unavailable: string }
  | { readonly notApplicable: string };

/** One row of the table: which figures it shows, how, and which one the ratios compare. */
export interface RowSpec {
  readonly label: string;
  readonly measures: readonly { readonly key: string; readonly format: (value: number) => string }[];
  /** The figure the ratio columns divide, ricochet's by each other system's; none: no ratios. */
  readonly ratio?: { readonly key: string; readonly better: 'higher' | 'lower' };
  readonly target?: string;
}

/** One row of a table whose columns are keyed by `K` (by default the systems of `pnpm bench`). */
export interface Row<K extends string = SystemName> {
  readonly spec: RowSpec;
  /** Per column, one outcome per run; a column without an entry has no such workload (`–`). */
  readonly runs: Partial<Record<K, readonly Outcome[]>>;
}

/** A column of figures: the key of its runs in each {@link Row}, and its heading. */
export interface FigureColumn<K extends string> {
  readonly key: K;
  readonly label: string;
}

/** A column of ratios: on each row's ratio figure, one figure column's median ÷ another's. */
export interface RatioColumn<K extends string> {
  readonly label: string;
  readonly numerator: K;
  readonly denominator: K;
}

/** The median of numbers (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/**
 * Several runs of one system into one outcome: the median of each figure on its own. A run that
 * failed makes the whole cell unavailable (a median of the runs that happened to work would hide it).
 */
export function summarizeRuns(runs: readonly Outcome[]): Outcome | undefined {
  if (runs.length === 0) return undefined;
  const failed = runs.find((run) => !('figures' in run));
  if (failed !== undefined) return failed;
  const figureRuns = runs.map((run) => ('figures' in run ? run.figures : {}));
  const keys = Object.keys(figureRuns[0] ?? {});
  return {
    figures: Object.fromEntries(
      keys.map((key) => [key, median(figureRuns.map((figures) => figures[key] ?? Number.NaN))]),
    ),
  };
}

export const count = (n: number) => Math.round(n).toLocaleString('en');
export const fixed2 = (n: number) => n.toFixed(2);

function cell(spec: RowSpec, outcome: Outcome | undefined): string {
  if (outcome === undefined) return '–';
  if ('unavailable' in outcome) return 'unavailable';
  if ('notApplicable' in outcome) return 'n/a';
  // A figure the system has no counterpart of (the reference's broker CPU) shows as a dash.
  return spec.measures
    .map(({ key, format }) => {
      const value = outcome.figures[key];
      return value === undefined ? '–' : format(value);
    })
    .join(' / ');
}

function ratio(spec: RowSpec, numerator: Outcome | undefined, denominator: Outcome | undefined): string {
  if (spec.ratio === undefined || numerator === undefined || denominator === undefined) return '–';
  if (!('figures' in numerator) || !('figures' in denominator)) return '–';
  const value =
    (numerator.figures[spec.ratio.key] ?? Number.NaN) / (denominator.figures[spec.ratio.key] ?? Number.NaN);
  return Number.isFinite(value) ? value.toFixed(2) : '–';
}

/**
 * A table of medians: one line per row with each figure column's figures (medians over the runs),
 * then each ratio column, then the row's target; after the rows the `legend`, if any; below it,
 * one note per column and row that has no figures, saying why.
 */
export function formatTable<K extends string>(
  rows: readonly Row<K>[],
  columns: {
    readonly figures: readonly FigureColumn<K>[];
    readonly ratios: readonly RatioColumn<K>[];
    readonly legend?: string;
  },
): string[] {
  const header = [
    'workload',
    ...columns.figures.map(({ label }) => label),
    ...columns.ratios.map(({ label }) => label),
    'target',
  ];
  const notes: string[] = [];
  const body = rows.map(({ spec, runs }) => {
    const summaries = new Map(columns.figures.map(({ key }) => [key, summarizeRuns(runs[key] ?? [])]));
    for (const { key, label } of columns.figures) {
      const summary = summaries.get(key);
      if (summary === undefined || 'figures' in summary) continue;
      const why =
        'unavailable' in summary ? `unavailable: ${summary.unavailable}` : `n/a: ${summary.notApplicable}`;
      notes.push(`  ${spec.label}, ${label}: ${why}`);
    }
    return [
      spec.label,
      ...columns.figures.map(({ key }) => cell(spec, summaries.get(key))),
      ...columns.ratios.map(({ numerator, denominator }) =>
        ratio(spec, summaries.get(numerator), summaries.get(denominator)),
      ),
      spec.target ?? '',
    ];
  });
  const widths = header.map((_, column) =>
    Math.max(...[header, ...body].map((line) => (line[column] ?? '').length)),
  );
  const layout = (line: string[]) =>
    line
      // Labels and targets (first and last) left-aligned, figures right-aligned.
      .map((text, column) =>
        column === 0 || column === line.length - 1
          ? text.padEnd(widths[column] ?? 0)
          : text.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [
    layout(header),
    ...body.map(layout),
    ...(columns.legend !== undefined ? [columns.legend] : []),
    ...(notes.length > 0 ? ['notes:', ...notes] : []),
  ];
}

/** Which way each ratio figure of `rows` is better, `rate: higher is better, …`; '' for none. */
export function betterLegend(rows: readonly { readonly spec: RowSpec }[]): string {
  const compared = new Map(
    rows.flatMap(({ spec }) => (spec.ratio ? [[spec.ratio.key, spec.ratio.better]] : [])),
  );
  return [...compared].map(([key, better]) => `${key}: ${better} is better`).join(', ');
}

/**
 * The side-by-side table: one line per row with every system's figures (medians over the runs),
 * then ricochet ÷ each other system on the row's ratio figure, then the target; below it, one
 * note per system and workload that has no figures, saying why.
 */
export function formatSideBySide(rows: readonly Row[], systems: readonly SystemName[]): string[] {
  const others = systems.filter((system) => system !== 'ricochet');
  const legend = betterLegend(rows);
  return formatTable(rows, {
    figures: systems.map((system) => ({ key: system, label: SYSTEM_LABELS[system] })),
    ratios: others.map((system) => ({
      label: `ricochet÷${system === 'reference' ? 'ref' : SYSTEM_LABELS[system]}`,
      numerator: 'ricochet',
      denominator: system,
    })),
    ...(others.length > 0 && legend !== ''
      ? { legend: `ratios: ricochet's figure ÷ the other's (${legend})` }
      : {}),
  });
}
