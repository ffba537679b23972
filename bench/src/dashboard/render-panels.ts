import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBroker } from '@ricochet/broker';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';

// `pnpm --filter @ricochet/bench dashboard-panels`: the Grafana dashboard's panels
// (docs/grafana/ricochet-dashboard.json) against a real broker under a scripted load, scraped by a
// real Prometheus (Debian's `prometheus` package) every second; each panel's PromQL is evaluated
// by that Prometheus (query_range) and drawn as one SVG, docs/images/dashboard-panels.svg.
// Grafana is not packaged for Debian, so this stands in for a screenshot.

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DASHBOARD = join(REPO_ROOT, 'docs/grafana/ricochet-dashboard.json');
const OUTPUT = join(REPO_ROOT, 'docs/images/dashboard-panels.svg');
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? 'prometheus';
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 90);
/** What `$__rate_interval` becomes: four scrapes of one second. */
const RATE_INTERVAL = '4s';

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly fieldConfig?: { readonly defaults?: { readonly unit?: string } };
  readonly targets?: readonly { readonly expr: string; readonly legendFormat?: string }[];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function untilReady(url: string, budgetMs: number): Promise<void> {
  const deadline = Date.now() + budgetMs;
  while (Date.now() < deadline) {
    const ready = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return;
    await sleep(200);
  }
  throw new Error(`${url} not ready within ${budgetMs} ms`);
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'ricochet-dashboard-'));
  const token = randomBytes(24).toString('base64url');
  const authFile = join(workDir, 'auth.json');
  writeFileSync(
    authFile,
    JSON.stringify({
      principals: [
        {
          name: 'app',
          tokenSha256: createHash('sha256').update(token).digest('hex'),
          publish: ['*'],
          consume: [{ group: '*', topics: ['*'] }],
          admin: 'write',
          metrics: true,
        },
      ],
    }),
  );
  const broker = await buildBroker({
    host: '127.0.0.1',
    port: 0,
    logLevel: 'silent',
    dataDir: join(workDir, 'data'),
    authFile,
  });
  const { port } = await broker.listen();
  const brokerUrl = `http://127.0.0.1:${port}`;
  const endpoint = `ws://127.0.0.1:${port}`;

  const promPort = await freePort();
  writeFileSync(
    join(workDir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: ricochet',
      `    static_configs: [{ targets: ['127.0.0.1:${port}'] }]`,
      `    authorization: { credentials: '${token}' }`,
      '',
    ].join('\n'),
  );
  const prometheus: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(workDir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(workDir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
  const promUrl = `http://127.0.0.1:${promPort}`;
  const stops: (() => Promise<unknown>)[] = [];
  try {
    await untilReady(`${promUrl}/-/ready`, 30_000);
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${brokerUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    await admin('PUT', '/v1/groups/billing', {
      startFrom: 'earliest',
      maxRetries: 2,
      retryPolicy: { type: 'fixed', delayMs: 300 },
      pauseOnFailures: {
        minOutcomes: 20,
        failureRatio: 0.9,
        windowMs: 5_000,
        pauseMs: 2_000,
        maxPauseMs: 4_000,
      },
    });
    await admin('PUT', '/v1/groups/shipping', { startFrom: 'earliest' });

    const startedAtMs = Date.now();
    const elapsedS = () => (Date.now() - startedAtMs) / 1_000;
    // The scripted story: a steady flow; billing's consumer fails a quarter of first attempts
    // (retried) and every poison message (dead-lettered); a 10 s outage in the middle trips its
    // breaker; shipping's consumer is slow until two thirds in, so its backlog grows, then drains.
    const outage = () => elapsedS() > LOAD_SECONDS * 0.4 && elapsedS() < LOAD_SECONDS * 0.4 + 10;
    const billing = new PushConsumer({
      endpoint,
      token,
      group: 'billing',
      subscriptions: { orders: '*' },
      onListenerError: () => {},
      listener: (message) => {
        if (outage() || message.properties.poison === 'yes') return ConsumeResult.FAILURE;
        if (
          message.deliveryAttempt === 1 &&
          message.messageId.charCodeAt(message.messageId.length - 1) % 4 === 0
        )
          return ConsumeResult.FAILURE;
        return ConsumeResult.SUCCESS;
      },
    });
    await billing.start();
    stops.push(() => billing.close());
    const shipping = new SimpleConsumer({
      endpoint,
      token,
      group: 'shipping',
      subscriptions: { orders: '*' },
    });
    await shipping.start();
    stops.push(() => shipping.close());
    const producer = new Producer({ endpoint, token });
    await producer.start();
    stops.push(() => producer.close());

    let running = true;
    let failure: unknown;
    // A loop that fails stops the load; the error is thrown once every loop has ended, so the
    // finally below still stops Prometheus and the broker.
    const loop = (body: () => Promise<void>) =>
      body().catch((error: unknown) => {
        failure ??= error;
        running = false;
      });
    const produce = loop(async () => {
      for (let tick = 0; running; tick++) {
        const sends = Array.from({ length: 5 }, (_, i) =>
          producer.send({
            topic: 'orders',
            body: `order ${tick}-${i}`,
            ...((tick * 5 + i) % 50 === 0 ? { properties: { poison: 'yes' } } : {}),
          }),
        );
        await Promise.all(sends);
        await sleep(100);
      }
    });
    const ship = loop(async () => {
      while (running) {
        const fast = elapsedS() > LOAD_SECONDS * 0.66;
        const messages = await shipping.receive(fast ? 32 : 3, 30_000);
        await Promise.all(messages.map((message) => shipping.ack(message)));
        if (!fast) await sleep(100);
      }
    });
    const intrude = loop(async () => {
      while (running) {
        await fetch(`${brokerUrl}/v1/topics`, { headers: { authorization: 'Bearer not-a-token' } });
        if (elapsedS() % 10 < 2) await fetch(`${brokerUrl}/v1/topics`);
        await sleep(1_000);
      }
    });
    while (running && elapsedS() < LOAD_SECONDS) {
      await sleep(1_000);
      process.stdout.write(`\rload ${Math.round(elapsedS())} / ${LOAD_SECONDS} s`);
    }
    const loadEndS = Date.now() / 1_000;
    running = false;
    await Promise.all([produce, ship, intrude]);
    process.stdout.write('\n');
    if (failure !== undefined) throw failure;

    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    const endS = loadEndS;
    const startS = startedAtMs / 1_000;
    const drawn: DrawnPanel[] = [];
    for (const panel of panels) {
      const series: Series[] = [];
      for (const target of panel.targets ?? []) {
        const query = target.expr
          .replaceAll('$__rate_interval', RATE_INTERVAL)
          .replaceAll('$instance', '.*')
          .replaceAll('$group', '.*');
        const url = `${promUrl}/api/v1/query_range?${new URLSearchParams({
          query,
          start: String(startS),
          end: String(endS),
          step: '1',
        })}`;
        const answer = (await (await fetch(url)).json()) as {
          status: string;
          error?: string;
          data?: { result: { metric: Record<string, string>; values: [number, string][] }[] };
        };
        if (answer.status !== 'success') throw new Error(`${panel.title}: ${query}: ${answer.error}`);
        for (const result of answer.data?.result ?? []) {
          series.push({
            name: (target.legendFormat ?? '').replace(
              /\{\{(\w+)\}\}/g,
              (_, label: string) => result.metric[label] ?? '',
            ),
            points: result.values.map(([time, value]) => [time - startS, Number(value)]),
          });
        }
      }
      drawn.push({ title: panel.title, unit: panel.fieldConfig?.defaults?.unit ?? 'short', series });
    }
    writeFileSync(OUTPUT, renderSvg(drawn, endS - startS));
    console.log(`wrote ${OUTPUT}: ${drawn.length} panels over ${Math.round(endS - startS)} s`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    prometheus.kill('SIGTERM');
    await broker.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

interface DrawnPanel {
  readonly title: string;
  readonly unit: string;
  readonly series: readonly Series[];
}

const COLORS = ['#7eb26d', '#eab839', '#6ed0e0', '#ef843c', '#e24d42', '#1f78c1', '#ba43a9', '#705da0'];
const PANEL_W = 460;
const PANEL_H = 230;
const COLUMNS = 3;

function formatValue(value: number, unit: string): string {
  if (unit === 'bytes') {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let scaled = value;
    let index = 0;
    while (Math.abs(scaled) >= 1024 && index < units.length - 1) {
      scaled /= 1024;
      index++;
    }
    return `${scaled.toFixed(scaled < 10 ? 1 : 0)} ${units[index]}`;
  }
  if (unit === 's')
    return value < 1 ? `${(value * 1_000).toFixed(value < 0.01 ? 1 : 0)} ms` : `${value.toFixed(1)} s`;
  const text =
    Math.abs(value) >= 1_000 ? `${(value / 1_000).toFixed(1)}k` : Number(value.toFixed(2)).toString();
  return unit === 'ops' ? `${text}/s` : text;
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&"]/g,
    (char) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[char] ?? char,
  );
}

function renderPanel(panel: DrawnPanel, x: number, y: number, durationS: number): string {
  const left = 58;
  const top = 28;
  const plotW = PANEL_W - left - 12;
  const plotH = PANEL_H - top - 62;
  const values = panel.series
    .flatMap((series) => series.points.map(([, value]) => value))
    .filter(Number.isFinite);
  const maxValue = Math.max(...values, 0) || 1;
  const parts: string[] = [
    `<g transform="translate(${x},${y})">`,
    `<rect width="${PANEL_W - 8}" height="${PANEL_H - 8}" rx="3" fill="#181b1f" stroke="#2c3235"/>`,
    `<text x="10" y="18" fill="#d8d9da" font-size="13" font-weight="600">${escapeXml(panel.title)}</text>`,
  ];
  for (const fraction of [0, 0.5, 1]) {
    const lineY = top + plotH - fraction * plotH;
    parts.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${lineY}" y2="${lineY}" stroke="#2c3235"/>`,
      `<text x="${left - 4}" y="${lineY + 4}" fill="#8e8e8e" font-size="10" text-anchor="end">${escapeXml(formatValue(maxValue * fraction, panel.unit))}</text>`,
    );
  }
  for (const seconds of [0, Math.round(durationS / 2), Math.round(durationS)]) {
    parts.push(
      `<text x="${left + (seconds / durationS) * plotW}" y="${top + plotH + 14}" fill="#8e8e8e" font-size="10" text-anchor="middle">${seconds} s</text>`,
    );
  }
  if (panel.series.length === 0) {
    parts.push(
      `<text x="${left + plotW / 2}" y="${top + plotH / 2}" fill="#8e8e8e" font-size="12" text-anchor="middle">No data</text>`,
    );
  }
  panel.series.forEach((series, index) => {
    const color = COLORS[index % COLORS.length];
    const points = series.points
      .filter(([, value]) => Number.isFinite(value))
      .map(
        ([time, value]) =>
          `${(left + (time / durationS) * plotW).toFixed(1)},${(top + plotH - (value / maxValue) * plotH).toFixed(1)}`,
      )
      .join(' ');
    parts.push(`<polyline points="${points}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
  });
  panel.series.slice(0, 6).forEach((series, index) => {
    const legendX = 10 + (index % 3) * 148;
    const legendY = PANEL_H - 34 + Math.floor(index / 3) * 14;
    parts.push(
      `<rect x="${legendX}" y="${legendY - 8}" width="10" height="3" fill="${COLORS[index % COLORS.length]}"/>`,
      `<text x="${legendX + 14}" y="${legendY - 3}" fill="#c7d0d9" font-size="10">${escapeXml(series.name.slice(0, 24))}</text>`,
    );
  });
  parts.push('</g>');
  return parts.join('\n');
}

function renderSvg(panels: readonly DrawnPanel[], durationS: number): string {
  const rows = Math.ceil(panels.length / COLUMNS);
  const width = COLUMNS * PANEL_W + 8;
  const height = rows * PANEL_H + 40;
  const body = panels.map((panel, index) =>
    renderPanel(
      panel,
      8 + (index % COLUMNS) * PANEL_W,
      36 + Math.floor(index / COLUMNS) * PANEL_H,
      durationS,
    ),
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Inter, Helvetica, Arial, sans-serif">`,
    `<title>The Ricochet Grafana dashboard's ${panels.length} panels over ${Math.round(durationS)} s of a real broker</title>`,
    `<rect width="${width}" height="${height}" fill="#111217"/>`,
    `<text x="12" y="24" fill="#d8d9da" font-size="16" font-weight="600">Ricochet — docs/grafana/ricochet-dashboard.json, each panel's query evaluated by Prometheus over ${Math.round(durationS)} s of a real broker</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

await main();
