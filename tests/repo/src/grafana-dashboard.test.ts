import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoPath } from './repo-root.js';

/**
 * The Grafana dashboard in docs/grafana (docs/guides/observability.md) cannot drift from the
 * broker: every metric its panels and variables query is one a real broker's `/metrics` exports.
 */
const DASHBOARD_PATH = 'docs/grafana/ricochet-dashboard.json';

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly { readonly expr: string }[];
}

interface Dashboard {
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly { readonly query: { readonly query: string } }[] };
}

/** PromQL's words that are neither functions nor metrics. */
const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);

/**
 * The metric names a PromQL expression selects: its identifiers once strings, label matchers,
 * ranges and label lists (`by (…)`) are taken out, less functions (followed by `(`) and keywords.
 */
function metricNamesOf(expression: string): string[] {
  const stripped = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  // Not after a digit or a dot, so the exponent of `1e9` is no name.
  for (const match of stripped.matchAll(/(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const [name] = match;
    const isFunction = /^\s*\(/.test(stripped.slice((match.index ?? 0) + name.length));
    if (isFunction || PROMQL_KEYWORDS.has(name)) continue;
    names.add(name);
  }
  return [...names];
}

/** Every series name an exposition can hold: each metric's, and a histogram's `_bucket`, `_sum` and `_count`. */
function exportedSeriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const [hash, keyword, name, type] = line.split(' ');
    if (hash !== '#' || keyword !== 'TYPE' || name === undefined) continue;
    names.add(name);
    if (type === 'histogram' || type === 'summary') {
      for (const suffix of ['_sum', '_count', ...(type === 'histogram' ? ['_bucket'] : [])])
        names.add(name + suffix);
    }
  }
  return names;
}

describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(repoPath(DASHBOARD_PATH), 'utf8')) as Dashboard;
  const queryPanels = dashboard.panels.filter((panel) => panel.type !== 'row');
  let exported = new Set<string>();
  let dataDir = '';
  let close = async () => {};

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ricochet-dashboard-'));
    const broker = await buildBroker({ host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir });
    close = () => broker.close();
    const { port } = await broker.listen();
    exported = exportedSeriesNames(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
  }, 30_000);

  afterAll(async () => {
    await close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads PromQL as the check needs', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.99, sum by (le) (rate(a_bucket{instance=~"$x", b="{c}"}[$__rate_interval]))) / on (i) b_total / 1e9 or vector(0)',
      ),
    ).toEqual(['a_bucket', 'b_total']);
  });

  it('has panels, each with a query', () => {
    expect(queryPanels.length).toBeGreaterThan(10);
    for (const panel of queryPanels) expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
  });

  it('queries only metrics a real broker exports', () => {
    expect(exported.size).toBeGreaterThan(40);
    const expressions = [
      ...queryPanels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
      ...dashboard.templating.list.map((variable) =>
        // `label_values(metric{…}, label)`: the metric is the first argument.
        variable.query.query.replace(/^label_values\((.*),\s*\w+\)$/, '$1'),
      ),
    ];
    const unknown = expressions.flatMap((expression) =>
      metricNamesOf(expression)
        .filter((name) => !exported.has(name))
        .map((name) => `${name} in ${expression}`),
    );
    expect(unknown).toEqual([]);
  });

  it('graphs what an operator watches first', () => {
    const queried = new Set(
      queryPanels.flatMap((panel) => (panel.targets ?? []).flatMap((target) => metricNamesOf(target.expr))),
    );
    for (const name of [
      'ricochet_messages_sent_total',
      'ricochet_messages_delivered_total',
      'ricochet_messages_acked_total',
      'ricochet_group_backlog_messages',
      'ricochet_messages_retried_total',
      'ricochet_messages_dead_lettered_total',
      'ricochet_retry_lateness_seconds_bucket',
      'ricochet_store_bytes',
      'ricochet_auth_failures_total',
      'ricochet_group_paused',
    ]) {
      expect(queried, name).toContain(name);
    }
  });
});
