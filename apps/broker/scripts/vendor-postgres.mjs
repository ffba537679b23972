// Ship the patched PostgreSQL driver inside the broker's build (see src/store/postgres/driver.ts):
// copy the workspace's postgres.js, installed with patches/postgres@3.4.9.patch applied, into
// dist/vendor/postgres, and point dist/store/postgres/driver.js at it. An install from npm then
// runs the fixed driver, not the registry's. The build fails when the copy lacks the fix, so a
// driver upgrade that drops the patch cannot ship the defect silently.
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A line the patch adds to every copy of connection.js: its mark. */
const PATCH_MARK = 'porsager/postgres#1154, #1208';

const broker = fileURLToPath(new URL('..', import.meta.url));
// What require resolves is the CommonJS build, cjs/src/index.js: the package's root is two up.
// Its `import` entry, src/index.js, is what ships: ES modules with no dependencies of their own.
const packageRoot = join(
  dirname(createRequire(join(broker, 'package.json')).resolve('postgres')),
  '..',
  '..',
);
const driverSource = join(packageRoot, 'src');
const manifest = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8'));
const vendored = join(broker, 'dist', 'vendor', 'postgres');

if (!readFileSync(join(driverSource, 'connection.js'), 'utf8').includes(PATCH_MARK)) {
  throw new Error(`vendor-postgres: ${driverSource} is postgres.js without the patch; run pnpm install`);
}
rmSync(vendored, { recursive: true, force: true });
cpSync(driverSource, join(vendored, 'src'), { recursive: true });
writeFileSync(
  join(vendored, 'package.json'),
  `${JSON.stringify(
    {
      name: 'postgres',
      version: `${manifest.version}-ricochet`,
      description: `postgres.js ${manifest.version} with patches/postgres@${manifest.version}.patch of the Ricochet repository, shipped inside @ricochet/broker`,
      license: manifest.license,
      type: 'module',
    },
    null,
    2,
  )}\n`,
);

const driver = join(broker, 'dist', 'store', 'postgres', 'driver.js');
const compiled = readFileSync(driver, 'utf8');
const pointed = compiled.replace("from 'postgres';", "from '../../vendor/postgres/src/index.js';");
if (pointed === compiled)
  throw new Error(`vendor-postgres: ${driver} does not import 'postgres' as expected`);
writeFileSync(driver, pointed);
