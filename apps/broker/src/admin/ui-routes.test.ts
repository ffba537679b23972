import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBroker } from '../broker.test-support.js';

let bundle: string;

beforeAll(() => {
  bundle = mkdtempSync(join(tmpdir(), 'ricochet-ui-'));
  mkdirSync(join(bundle, 'assets'));
  writeFileSync(join(bundle, 'index.html'), '<!doctype html><title>dashboard</title>');
  writeFileSync(join(bundle, 'assets', 'index-abc123.js'), 'console.log(1)');
  writeFileSync(join(bundle, 'assets', 'index-abc123.css'), 'body{}');
});
afterAll(() => rmSync(bundle, { recursive: true, force: true }));

const get = (broker: { address?: { port: number } | undefined }, path: string) =>
  fetch(`http://127.0.0.1:${broker.address?.port}${path}`, { redirect: 'manual' });

describe('the dashboard at /ui', () => {
  it('serves the bundle with content types and caching: index revalidated, hashed assets immutable', async () => {
    await using broker = await startTestBroker({ uiDir: bundle });
    expect((await get(broker, '/ui')).headers.get('location')).toBe('/ui/');
    const index = await get(broker, '/ui/');
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await index.text()).toContain('<title>dashboard</title>');
    const script = await get(broker, '/ui/assets/index-abc123.js');
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await get(broker, '/ui/assets/index-abc123.css')).headers.get('content-type')).toBe(
      'text/css; charset=utf-8',
    );
  });

  it('routes a page path to index.html, and answers 404 for a missing file or a path out of the bundle', async () => {
    await using broker = await startTestBroker({ uiDir: bundle });
    expect(await (await get(broker, '/ui/groups/billing')).text()).toContain('<title>dashboard</title>');
    expect((await get(broker, '/ui/assets/missing.js')).status).toBe(404);
    expect((await get(broker, '/ui/..%2f..%2fetc%2fpasswd.txt')).status).toBe(404);
  });

  it('still starts without a bundle and explains at /ui how to build it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'ricochet-no-ui-'));
    try {
      await using broker = await startTestBroker({ uiDir: empty });
      const page = await get(broker, '/ui/');
      expect(page.status).toBe(404);
      expect(await page.text()).toContain('pnpm --filter @ricochet/dashboard build');
      expect((await get(broker, '/healthz')).status).toBe(200);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('is off with ui: false (--no-ui)', async () => {
    await using broker = await startTestBroker({ ui: false, uiDir: bundle });
    expect((await get(broker, '/ui/')).status).toBe(404);
    expect(await (await get(broker, '/ui/')).text()).not.toContain('dashboard');
  });
});
