import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { repoPath } from './repo-root.js';
import { listTypeScriptFiles } from './workspace-packages.js';

/** The broker's source folder. */
export const BROKER_SRC = repoPath('apps/broker/src');

/** Whether a file is source, not a test or test support. */
export function isSource(file: string): boolean {
  return !file.endsWith('.test.ts') && !file.endsWith('.test-support.ts');
}

/** Every source file of the broker, by absolute path. */
export function brokerSourceFiles(): string[] {
  return listTypeScriptFiles(BROKER_SRC).filter(isSource);
}

/** A file's relative imports and re-exports (type-only ones too), resolved to the files they name. */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const targets: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)) {
    const specifier = match[1] ?? '';
    targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
  }
  return targets;
}

/** The import graph among `files`: each file to the files of the set it imports. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(files.map((file) => [file, importsOf(file).filter((target) => known.has(target))]));
}
