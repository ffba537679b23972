import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Broker, buildBroker } from '@ricochet/broker';
import type { Browser } from 'playwright-core';
import { build, type Rollup } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_PATH, launchChromium } from '../../dashboard-e2e/src/chromium.js';
import { serveDirectory } from './static-server.js';

const EXAMPLE_DIR = fileURLToPath(new URL('../../../examples/browser/', import.meta.url));
/** How long the page may take to show a step's result on a loaded machine. */
const STEP_TIMEOUT_MS = 60_000;

let outDir: string;
let output: Rollup.RollupOutput;
let page: Awaited<ReturnType<typeof serveDirectory>>;
let broker: Broker;
let dataDir: string;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `the browser example's test needs Chromium at ${CHROMIUM_PATH}: install Debian's package ` +
        '(`apt-get install -y chromium`, which .ci/run does when it runs as root) or set CHROMIUM_PATH',
    );
  }
  outDir = mkdtempSync(join(tmpdir(), 'ricochet-browser-example-'));
  // The example's own Vite config, as `pnpm --filter @ricochet/example-browser build` uses it.
  output = (await build({
    root: EXAMPLE_DIR,
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  })) as Rollup.RollupOutput;
  page = await serveDirectory(outDir);
  dataDir = mkdtempSync(join(tmpdir(), 'ricochet-browser-e2e-'));
  broker = await buildBroker({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent' });
  await broker.listen();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await broker?.close();
  await page?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe('examples/browser: the producer and the simple consumer in a web page', () => {
  it('bundles for the browser without net, tls or ws', () => {
    const chunks = output.output.filter((item): item is Rollup.OutputChunk => item.type === 'chunk');
    const modules = chunks.flatMap((chunk) => chunk.moduleIds);
    expect(modules.some((id) => id.includes('/packages/producer/src/'))).toBe(true);
    expect(modules.some((id) => id.includes('/packages/simple-consumer/src/'))).toBe(true);
    expect(
      modules.filter((id) => /\/node_modules\/(?:\.pnpm\/)?ws[@/]|^(?:node:)?(?:net|tls|https)$/.test(id)),
    ).toEqual([]);
    for (const chunk of chunks) {
      const code = readFileSync(join(outDir, chunk.fileName), 'utf8');
      // No static import and no literal dynamic import of a Node module or of ws.
      expect(code).not.toMatch(/\bfrom\s*["'](?:ws|node:[\w/]+|net|tls)["']/);
      expect(code).not.toMatch(/\bimport\s*\(\s*["'`](?:ws|node:[\w/]+|net|tls)["'`]\s*\)/);
      expect(code).not.toContain('ws does not work in the browser');
    }
  });

  it('sends, receives and acks a message in headless Chromium against a real broker', async () => {
    const tab = await browser.newPage();
    const pageErrors: string[] = [];
    tab.on('pageerror', (error) => pageErrors.push(error.message));
    tab.setDefaultTimeout(STEP_TIMEOUT_MS);
    try {
      const endpoint = broker.address?.url ?? '';
      await tab.goto(`${page.url}/?endpoint=${encodeURIComponent(endpoint)}`);
      const log = tab.locator('#log');
      await tab.click('#connect');
      await log.getByText(`connected to ${endpoint}`).waitFor();
      await tab.fill('#body', '{"orderId":7}');
      await tab.click('#send');
      const sent = await log.getByText(/^sent \S+ at offset 0$/).textContent();
      const messageId = /^sent (\S+)/.exec(sent ?? '')?.[1] ?? '';
      await tab.click('#receive');
      await log.getByText(`received ${messageId}: {"orderId":7}`).waitFor();
      await log.getByText(`acked ${messageId}`).waitFor();
      // Not only the page's word: the broker has the message committed for the group.
      const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/groups/browser`);
      expect(((await response.json()) as { stats: unknown }).stats).toMatchObject({
        inflight: 0,
        committed: 1,
      });
      expect(pageErrors).toEqual([]);
    } finally {
      await tab.close();
    }
  });
});
