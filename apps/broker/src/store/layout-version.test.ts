import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideLayout, LAYOUT_VERSION, LayoutVersionError } from './layout-version.js';
import { openLmdbStore } from './lmdb-store.js';

describe('decideLayout', () => {
  it('initialises a new directory and opens one of its own layout', () => {
    expect(decideLayout(undefined)).toEqual({ action: 'initialise' });
    expect(decideLayout(LAYOUT_VERSION)).toEqual({ action: 'open' });
  });

  it('refuses a newer layout, saying a newer broker wrote it', () => {
    const decision = decideLayout(LAYOUT_VERSION + 1);
    expect(decision.action).toBe('refuse');
    expect(decision.action === 'refuse' && decision.reason).toMatch(/written by a newer broker/);
  });

  it('refuses an older layout it has no migration from, and a value no broker writes', () => {
    for (const found of [0, -1, 1.5, '1', null, { version: 1 }]) {
      expect(decideLayout(found).action, JSON.stringify(found)).toBe('refuse');
    }
  });
});

describe('opening a data directory', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ricochet-layout-version-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  async function metaOf(path: string): Promise<{ version: unknown; databases: string[] }> {
    const root = open({ path, noSubdir: false, maxDbs: 16 });
    try {
      const meta = root.openDB({ name: 'meta', encoding: 'msgpack' });
      const databases = [...root.getKeys({})].map(String);
      return { version: meta.get('layoutVersion'), databases };
    } finally {
      await root.close();
    }
  }

  async function writeLayoutVersion(path: string, version: unknown): Promise<void> {
    const root = open({ path, noSubdir: false, maxDbs: 16 });
    root.openDB({ name: 'meta', encoding: 'msgpack' }).putSync('layoutVersion', version);
    await root.close();
  }

  it('writes its layout version into a new directory', async () => {
    await openLmdbStore({ path: dir }).close();
    expect((await metaOf(dir)).version).toBe(LAYOUT_VERSION);
  });

  it('refuses a directory of a newer layout at open, and leaves it as it was', async () => {
    await writeLayoutVersion(dir, LAYOUT_VERSION + 1);
    expect(() => openLmdbStore({ path: dir })).toThrow(LayoutVersionError);
    expect(() => openLmdbStore({ path: dir })).toThrow(
      `the data directory has layout version ${LAYOUT_VERSION + 1}, written by a newer broker`,
    );
    expect(await metaOf(dir)).toEqual({ version: LAYOUT_VERSION + 1, databases: ['meta'] });
  });

  it('refuses a directory whose layout version no broker writes', async () => {
    await writeLayoutVersion(dir, 'one');
    expect(() => openLmdbStore({ path: dir })).toThrow(/layout version "one" is not one any broker writes/);
  });
});
