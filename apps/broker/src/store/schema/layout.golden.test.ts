import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT_VERSION } from '../layout-version.js';
import { openLmdbStore } from '../lmdb-store.js';
import type { StoredMessage } from '../records.js';
import { LAYOUT_V1_SAMPLE } from './layout-v1-sample.test-support.js';
import { dumpDataDir, loadDataDir, type RawDataDir } from './raw-data-dir.test-support.js';
import { asReadBack, readContents, writeContents } from './store-contents.test-support.js';

/**
 * The bytes of each layout the broker reads, pinned. Never regenerate a golden file to make a test
 * pass: a difference means a broker would write or read existing data directories differently,
 * which needs a new layout version and a migration (see layout-version.ts).
 *
 * Layout 1: every entry of every database (shared structures included) after the broker of the
 * time wrote {@link LAYOUT_V1_SAMPLE} into an empty directory, as {@link dumpDataDir} lists them.
 * It was made before stored records had a schema of their own, so it is the format data
 * directories already held. A broker of layout 2 opens and serves it.
 */
const GOLDEN_V1_PATH = new URL('./layout-v1.golden.json', import.meta.url);
/**
 * Layout 2: the databases it changed (`meta` and `messages`) after the broker wrote the same
 * sample into an empty directory; every other database is byte for byte layout 1's.
 */
const GOLDEN_V2_PATH = new URL('./layout-v2.golden.json', import.meta.url);

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-layout-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function goldenV1(): RawDataDir {
  return JSON.parse(readFileSync(GOLDEN_V1_PATH, 'utf8')) as RawDataDir;
}

/** Layout 2's golden directory: layout 1's, with the databases layout 2 changed replaced. */
function goldenV2(): RawDataDir {
  const changed = JSON.parse(readFileSync(GOLDEN_V2_PATH, 'utf8')) as RawDataDir;
  return { ...goldenV1(), ...changed };
}

describe('a layout 1 data directory', () => {
  it('is opened by writing its new layout version and nothing else', async () => {
    await loadDataDir(dir, goldenV1());
    await openLmdbStore({ path: dir }).close();
    const upgraded = goldenV1();
    const layoutKey = toHex('layoutVersion');
    const meta = upgraded.meta?.map(
      ([key, value]) => [key, key === layoutKey ? toHex(pack(LAYOUT_VERSION)) : value] as const,
    );
    expect(await dumpDataDir(dir)).toEqual({ ...upgraded, meta });
  });

  it('reads back as the sample', async () => {
    await loadDataDir(dir, goldenV1());
    const store = openLmdbStore({ path: dir });
    try {
      expect(readContents(store)).toStrictEqual(asReadBack(LAYOUT_V1_SAMPLE));
    } finally {
      await store.close();
    }
  });

  it('reads its messages beside the ones written after the upgrade, in one range', async () => {
    await loadDataDir(dir, goldenV1());
    const store = openLmdbStore({ path: dir });
    const next: StoredMessage = {
      messageId: 'm-orders-3',
      topic: 'orders',
      offset: 3,
      tag: 'paid',
      body: new TextEncoder().encode('{"orderId":9}'),
      bornAt: 1_700_000_000_100,
      storedAt: 1_700_000_000_101,
    };
    try {
      await store.appendMessage(next);
      const read = store
        .readMessages('orders', 0, 10)
        .map((message) => ({ ...message, body: new Uint8Array(message.body) }));
      const before = LAYOUT_V1_SAMPLE.messages.filter((message) => message.topic === 'orders');
      expect(read).toStrictEqual([...before, next]);
    } finally {
      await store.close();
    }
  });
});

describe('layout 2 on disk', () => {
  it('writes the sample byte for byte as the golden data directory holds it', async () => {
    const store = openLmdbStore({ path: dir });
    await writeContents(store, LAYOUT_V1_SAMPLE);
    await store.close();
    expect(await dumpDataDir(dir)).toEqual(goldenV2());
  });

  it('reads the golden data directory back as the sample', async () => {
    await loadDataDir(dir, goldenV2());
    const store = openLmdbStore({ path: dir });
    try {
      expect(readContents(store)).toStrictEqual(asReadBack(LAYOUT_V1_SAMPLE));
    } finally {
      await store.close();
    }
  });
});

function toHex(value: string | Uint8Array): string {
  return Buffer.from(value).toString('hex');
}
