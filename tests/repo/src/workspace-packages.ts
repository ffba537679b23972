import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoPath } from './repo-root.js';

/** What the checks need of a workspace package's manifest. */
export interface WorkspacePackage {
  readonly name: string;
  readonly dir: string;
  readonly private: boolean;
  readonly dependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly optionalDependencies: Readonly<Record<string, string>>;
}

/** The folders `pnpm-workspace.yaml` lists; a test checks the two agree. */
export const WORKSPACE_GLOBS = [
  'packages/*',
  'apps/*',
  'tests/*',
  'bench',
  'examples',
  'examples/testing',
  'examples/browser',
] as const;

/** Every package of the workspace, read from disk. */
export function readWorkspacePackages(): WorkspacePackage[] {
  const dirs: string[] = [];
  for (const glob of WORKSPACE_GLOBS) {
    if (glob.endsWith('/*')) {
      const parent = repoPath(glob.slice(0, -2));
      if (!existsSync(parent)) continue;
      for (const entry of readdirSync(parent, { withFileTypes: true })) {
        if (entry.isDirectory()) dirs.push(join(parent, entry.name));
      }
    } else {
      dirs.push(repoPath(glob));
    }
  }
  return dirs
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
      const record = (key: string) => (manifest[key] ?? {}) as Record<string, string>;
      return {
        name: String(manifest.name),
        dir,
        private: manifest.private === true,
        dependencies: record('dependencies'),
        devDependencies: record('devDependencies'),
        peerDependencies: record('peerDependencies'),
        optionalDependencies: record('optionalDependencies'),
      };
    });
}

/** Every `.ts` file below `dir`, recursively, skipping `node_modules` and `dist`. */
export function listTypeScriptFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listTypeScriptFiles(path));
    else if (entry.name.endsWith('.ts')) files.push(path);
  }
  return files;
}
