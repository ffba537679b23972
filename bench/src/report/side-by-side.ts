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

export interface Row {
  readonly spec: RowSpec;
  /** Per system, one outcome per run; a system without an entry has no such workload (`–`). */
  readonly runs: Partial<Record<SystemName, readonly Outcome[]>>;
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
  return spec.measures.map(({ key, format }) => format(outcome.figures[key] ?? Number.NaN)).join(' / ');
}

function ratio(spec: RowSpec, ricochet: Outcome | undefined, other: Outcome | undefined): string {
  if (spec.ratio === undefined || ricochet === undefined || other === undefined) return '–';
  if (!('figures' in ricochet) || !('figures' in other)) return '–';
  const value =
    (ricochet.figures[spec.ratio.key] ?? Number.NaN) / (other.figures[spec.ratio.key] ?? Number.NaN);
  return Number.isFinite(value) ? value.toFixed(2) : '–';
}

/**
 * The side-by-side table: one line per row with every system's figures (medians over the runs),
 * then ricochet ÷ each other system on the row's ratio figure, then the target; below it, one
 * note per system and workload that has no figures, saying why.
 */
export function formatSideBySide(rows: readonly Row[], systems: readonly SystemName[]): string[] {
  const others = systems.filter((system) => system !== 'ricochet');
  const header = [
    'workload',
    ...systems.map((system) => SYSTEM_LABELS[system]),
    ...others.map((system) => `ricochet÷${system === 'reference' ? 'ref' : SYSTEM_LABELS[system]}`),
    'target',
  ];
  const notes: string[] = [];
  const body = rows.map(({ spec, runs }) => {
    const summaries = new Map(systems.map((system) => [system, summarizeRuns(runs[system] ?? [])]));
    for (const [system, summary] of summaries) {
      if (summary === undefined || 'figures' in summary) continue;
      const why =
        'unavailable' in summary ? `unavailable: ${summary.unavailable}` : `n/a: ${summary.notApplicable}`;
      notes.push(`  ${spec.label}, ${SYSTEM_LABELS[system]}: ${why}`);
    }
    const ricochet = summaries.get('ricochet');
    return [
      spec.label,
      ...systems.map((system) => cell(spec, summaries.get(system))),
      ...others.map((system) => ratio(spec, ricochet, summaries.get(system))),
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
  const compared = new Map(
    rows.flatMap(({ spec }) => (spec.ratio ? [[spec.ratio.key, spec.ratio.better]] : [])),
  );
  const legend = [...compared].map(([key, better]) => `${key}: ${better} is better`).join(', ');
  return [
    layout(header),
    ...body.map(layout),
    ...(others.length > 0 && legend !== '' ? [`ratios: ricochet's figure ÷ the other's (${legend})`] : []),
    ...(notes.length > 0 ? ['notes:', ...notes] : []),
  ];
}
