import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, repoPath } from './repo-root.js';
import { listTypeScriptFiles, WORKSPACE_GLOBS } from './workspace-packages.js';

/** STYLE.md: files of one concern, under 400 lines, tests included. */
const MAX_LINES = 400;

/** Every TypeScript file of the workspace's folders (a folder listed twice, like `examples`, once). */
function workspaceFiles(): string[] {
  const roots = new Set(WORKSPACE_GLOBS.map((glob) => glob.replace(/\/\*$/, '').split('/')[0] as string));
  return [...roots].flatMap((root) => listTypeScriptFiles(repoPath(root)));
}

describe('file size (STYLE.md)', () => {
  it(`keeps every TypeScript file at ${MAX_LINES} lines or fewer, tests included`, () => {
    const files = workspaceFiles();
    expect(files.length).toBeGreaterThan(100);
    const tooLong = files
      .map((file) => ({
        file: relative(REPO_ROOT, file),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter(({ lines }) => lines > MAX_LINES);
    expect(tooLong).toEqual([]);
  });
});
