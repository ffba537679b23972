import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, repoPath } from './repo-root.js';
import {
  listTypeScriptFiles,
  readWorkspacePackages,
  WORKSPACE_GLOBS,
  type WorkspacePackage,
} from './workspace-packages.js';

/**
 * DESIGN.md §1: the workspace packages each published package may depend on, and the only
 * third-party packages it may need at run time. Other private packages (tests, bench) may use
 * anything. A package missing from this table fails the test, so a new package forces a decision here.
 */
const ALLOWED: Record<string, { workspace: readonly string[]; external: readonly string[] }> = {
  // `@opentelemetry/api`: an optional peer of the four client packages (tracing of sends and
  // deliveries), loaded by the client only where the application has installed it.
  '@ricochet/core': { workspace: [], external: [] },
  '@ricochet/protocol': { workspace: ['@ricochet/core'], external: ['zod', 'msgpackr'] },
  '@ricochet/client': {
    workspace: ['@ricochet/core', '@ricochet/protocol'],
    external: ['ws', '@opentelemetry/api'],
  },
  '@ricochet/producer': {
    workspace: ['@ricochet/client', '@ricochet/core', '@ricochet/protocol'],
    external: ['@opentelemetry/api'],
  },
  '@ricochet/push-consumer': {
    workspace: ['@ricochet/client', '@ricochet/core', '@ricochet/protocol'],
    external: ['@opentelemetry/api'],
  },
  '@ricochet/simple-consumer': {
    workspace: ['@ricochet/client', '@ricochet/core', '@ricochet/protocol'],
    external: ['@opentelemetry/api'],
  },
  '@ricochet/broker': {
    workspace: ['@ricochet/core', '@ricochet/protocol'],
    // `postgres`: the driver of the PostgreSQL store (DESIGN.md §9), loaded only when `--store` names one.
    // `@grpc/proto-loader`: the RocketMQ 5 endpoint's schema (DESIGN.md §10), whose generic codec
    // serves the rare RPCs; `protobufjs` (proto-loader's own codec library): its reader and writer
    // under the endpoint's own codecs of the hot RPCs. The gRPC server itself is the broker's own,
    // on node:http2 (issue 44): grpc-js is no run-time dependency.
    external: [
      'fastify',
      '@fastify/websocket',
      'ws',
      'lmdb',
      'zod',
      'prom-client',
      'msgpackr',
      'postgres',
      '@grpc/proto-loader',
      'protobufjs',
    ],
  },
  // The testing kit runs the real broker in process; it drives it through `buildBroker` and the
  // admin API, and never a client package (users bring their own, so a test uses the real ones).
  '@ricochet/testing': {
    workspace: ['@ricochet/broker', '@ricochet/core', '@ricochet/protocol'],
    external: [],
  },
  // The `ricochet` CLI is a user of the broker, not part of it: it speaks the admin HTTP API with
  // fetch and the wire protocol through the client packages, never by importing the broker.
  '@ricochet/cli': {
    workspace: ['@ricochet/producer', '@ricochet/push-consumer', '@ricochet/protocol'],
    external: [],
  },
  // Private (the broker's build copies its bundle into dist/ui, so it is published inside the
  // broker), but held to its edges: what it imports ends up in the browser, so core's pure retry
  // functions and preact only, and the protocol for the types of the admin API's answers (its
  // schemas, DESIGN.md §8: `import type` only, so nothing of it reaches the bundle). The broker
  // depends on it for the build order only (a devDependency).
  '@ricochet/dashboard': { workspace: ['@ricochet/core', '@ricochet/protocol'], external: ['preact'] },
  // Private, but held to its edges: every client package's tests import it, so an edge to any of
  // them would be a cycle.
  '@ricochet/client-testkit': {
    workspace: ['@ricochet/core', '@ricochet/protocol'],
    external: ['ws'],
  },
  // Private, but held to its edges: the broker's store tests and the benches start their PostgreSQL
  // server with it, so it needs the `postgres` client only; an edge to the broker would be a cycle.
  '@ricochet/postgres-testkit': { workspace: [], external: ['postgres'] },
};

/**
 * Test code: a package's tests, fixtures and test support (which no build ships: the broker's
 * `tsconfig.build.json` leaves `*.test-support.ts` out), and every file of a private package.
 */
function isTestCode(pkg: WorkspacePackage, file: string): boolean {
  return (
    pkg.private ||
    file.endsWith('.test.ts') ||
    file.endsWith('.fixture.ts') ||
    file.endsWith('.test-support.ts')
  );
}

/** The bare package names and the relative specifiers `source` imports. */
function importsOf(source: string): { packages: string[]; relative: string[] } {
  const packages: string[] = [];
  const relativeSpecifiers: string[] = [];
  for (const match of source.matchAll(/\bfrom\s+'([^']+)'|\bimport\s*\(\s*'([^']+)'\s*\)/g)) {
    const specifier = match[1] ?? match[2] ?? '';
    if (specifier.startsWith('.')) {
      relativeSpecifiers.push(specifier);
      continue;
    }
    if (specifier.startsWith('node:')) continue;
    const packageName = specifier.startsWith('@')
      ? specifier.split('/').slice(0, 2).join('/')
      : specifier.split('/')[0];
    if (packageName) packages.push(packageName);
  }
  return { packages, relative: relativeSpecifiers };
}

const packages = readWorkspacePackages();
const workspaceNames = new Set(packages.map((pkg) => pkg.name));
const published = packages.filter((pkg) => !pkg.private);
/** The packages held to the table: every published one, and the private ones listed in it. */
const checked = packages.filter((pkg) => !pkg.private || pkg.name in ALLOWED);
/** The root's dev tools (vitest, fast-check) are there for every package's tests. */
const rootDevDependencies = Object.keys(
  (JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { devDependencies?: Record<string, string> })
    .devDependencies ?? {},
);

describe('workspace dependency edges (DESIGN.md §1)', () => {
  it('pnpm-workspace.yaml lists the folders this check reads', () => {
    const yaml = readFileSync(repoPath('pnpm-workspace.yaml'), 'utf8');
    // The `packages:` list runs until the next top-level key.
    const section = yaml.split(/^packages:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
    const listed = [...section.matchAll(/^\s*-\s*(\S+)\s*$/gm)].map((match) => match[1]);
    expect(listed).toEqual([...WORKSPACE_GLOBS]);
  });

  it('knows every published package', () => {
    expect(published.map((pkg) => pkg.name).filter((name) => !(name in ALLOWED))).toEqual([]);
  });

  it.each(checked.map((pkg) => [pkg.name, pkg] as const))('%s declares only allowed edges', (name, pkg) => {
    const allowed = ALLOWED[name] ?? { workspace: [], external: [] };
    const runtime = { ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.optionalDependencies };
    const badWorkspace = Object.keys(runtime).filter(
      (dep) => workspaceNames.has(dep) && !allowed.workspace.includes(dep),
    );
    const badExternal = Object.keys(runtime).filter(
      (dep) => !workspaceNames.has(dep) && !allowed.external.includes(dep),
    );
    // Test-only edges are allowed to be wider (the broker's own tests may drive it with a client),
    // but never an edge that would make a published package depend on itself through a cycle.
    const devCycle = Object.keys(pkg.devDependencies).filter(
      (dep) => workspaceNames.has(dep) && ALLOWED[dep]?.workspace.includes(name),
    );
    expect({ badWorkspace, badExternal, devCycle }).toEqual({
      badWorkspace: [],
      badExternal: [],
      devCycle: [],
    });
  });

  it.each(checked.map((pkg) => [pkg.name, pkg] as const))('%s imports only what it declares', (_, pkg) => {
    const runtime = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)];
    const forTests = new Set([...runtime, ...Object.keys(pkg.devDependencies), ...rootDevDependencies]);
    const forRuntime = new Set(runtime);
    const undeclared: string[] = [];
    for (const file of listTypeScriptFiles(join(pkg.dir, 'src'))) {
      const declared = isTestCode(pkg, file) ? forTests : forRuntime;
      for (const packageName of importsOf(readFileSync(file, 'utf8')).packages) {
        if (!declared.has(packageName)) undeclared.push(`${relative(REPO_ROOT, file)} → ${packageName}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('the client packages take @opentelemetry/api as an optional peer only, so they install without it', () => {
    const clients = [
      '@ricochet/client',
      '@ricochet/producer',
      '@ricochet/push-consumer',
      '@ricochet/simple-consumer',
    ];
    for (const name of clients) {
      const manifest = JSON.parse(
        readFileSync(join(packages.find((pkg) => pkg.name === name)?.dir ?? '', 'package.json'), 'utf8'),
      ) as Record<string, Record<string, unknown> | undefined>;
      expect({ name, dependency: manifest.dependencies?.['@opentelemetry/api'] }).toEqual({
        name,
        dependency: undefined,
      });
      expect(manifest.peerDependencies?.['@opentelemetry/api']).toMatch(/^\^1\./);
      expect(manifest.peerDependenciesMeta?.['@opentelemetry/api']).toEqual({ optional: true });
    }
  });

  it('the dashboard imports @ricochet/protocol for its types only, so none of it reaches the browser', () => {
    const dashboard = join(REPO_ROOT, 'apps', 'dashboard', 'src');
    const sources = readdirSync(dashboard, { recursive: true, encoding: 'utf8' }).filter((file) =>
      /\.tsx?$/.test(file),
    );
    expect(sources.length).toBeGreaterThan(0);
    const valueImports = sources.filter((file) =>
      /^import (?!type )[^;]*from '@ricochet\/protocol'/m.test(readFileSync(join(dashboard, file), 'utf8')),
    );
    expect(valueImports).toEqual([]);
  });

  it.each(checked.map((pkg) => [pkg.name, pkg] as const))(
    '%s reaches other packages by name only, never by a relative path',
    (_, pkg) => {
      const escaping: string[] = [];
      for (const file of listTypeScriptFiles(join(pkg.dir, 'src'))) {
        for (const specifier of importsOf(readFileSync(file, 'utf8')).relative) {
          const target = resolve(dirname(file), specifier);
          if (!target.startsWith(pkg.dir + sep)) escaping.push(`${relative(REPO_ROOT, file)} → ${specifier}`);
        }
      }
      expect(escaping).toEqual([]);
    },
  );
});
