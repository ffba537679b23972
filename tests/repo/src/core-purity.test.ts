import { readFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, repoPath } from './repo-root.js';
import { listTypeScriptFiles } from './workspace-packages.js';

/**
 * DESIGN.md §1: `@ricochet/core` is pure. It reaches time and randomness only through an injected
 * `Clock` and `random`; the one place each default is defined is exempt.
 */
const FORBIDDEN: readonly { pattern: RegExp; what: string; allowedIn?: string }[] = [
  { pattern: /from\s+'node:|require\(/, what: 'a Node import' },
  { pattern: /\bDate\.now\s*\(|new Date\s*\(/, what: 'the wall clock', allowedIn: 'clock.ts' },
  { pattern: /\bMath\.random\s*\(/, what: 'Math.random', allowedIn: 'random.ts' },
  { pattern: /\b(setTimeout|setInterval|setImmediate|queueMicrotask)\s*\(/, what: 'a timer' },
  { pattern: /\bprocess\.|\bperformance\.now\s*\(/, what: 'the process or its clock' },
];

describe('@ricochet/core purity', () => {
  const sources = listTypeScriptFiles(repoPath('packages/core/src')).filter(
    (file) => !file.endsWith('.test.ts'),
  );

  it('has sources to check', () => {
    expect(sources.length).toBeGreaterThan(5);
  });

  it('uses no I/O, timers, wall clock or global randomness', () => {
    const violations: string[] = [];
    for (const file of sources) {
      const code = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line));
      for (const [index, line] of code.entries()) {
        for (const rule of FORBIDDEN) {
          if (rule.pattern.test(line) && rule.allowedIn !== basename(file)) {
            violations.push(`${relative(REPO_ROOT, file)}:${index + 1} uses ${rule.what}: ${line.trim()}`);
          }
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('has no runtime dependencies', () => {
    const manifest = JSON.parse(readFileSync(repoPath('packages/core/package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest.dependencies ?? {}).toEqual({});
  });
});
