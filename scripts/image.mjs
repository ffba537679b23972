// `pnpm image`: build the broker's container image (deploy/Dockerfile) as ricochet-broker:<version>
// and ricochet-broker:latest, <version> being @ricochet/broker's.
//
//   NODE_IMAGE=<image>          the runtime's base (default node:22-bookworm-slim, the Dockerfile's)
//   RICOCHET_IMAGE_PREBUILT=1   make the broker's production tree here (turbo build, then `pnpm
//                               deploy --prod`) and copy it into the image: the build's steps
//                               run without a network, and need only the base image
//   DOCKER=<command>            the Docker CLI (default `docker`); it must build with BuildKit
//
// Prints the image's id and size last. Exits non-zero, saying why, when a step fails.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../apps/broker/package.json', import.meta.url), 'utf8'));
const docker = process.env.DOCKER || 'docker';
const prebuilt = process.env.RICOCHET_IMAGE_PREBUILT === '1';
const nodeImage = process.env.NODE_IMAGE;
const tags = [`ricochet-broker:${version}`, 'ricochet-broker:latest'];
/** Where the prebuilt tree goes: inside the build context, ignored by git (.gitignore). */
const prebuiltTree = '.image/broker';

/** Run a command in the repository's root, its output passed through; exit on failure. */
function run(command, args, env = process.env) {
  console.log(`$ ${[command, ...args].join(' ')}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (result.error) fail(`${command} could not run: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args[0]} exited with ${result.status ?? result.signal}`);
}

function fail(message) {
  console.error(`pnpm image: ${message}`);
  process.exit(1);
}

if (prebuilt) {
  run('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@ricochet/broker...', '--output-logs=errors-only']);
  rmSync(new URL(`../${prebuiltTree}`, import.meta.url), { recursive: true, force: true });
  run('pnpm', [
    '--filter',
    '@ricochet/broker',
    'deploy',
    '--prod',
    '--legacy',
    '--prefer-offline',
    prebuiltTree,
  ]);
}
try {
  run(
    docker,
    [
      'build',
      '--file',
      'deploy/Dockerfile',
      ...tags.flatMap((tag) => ['--tag', tag]),
      ...(nodeImage ? ['--build-arg', `NODE_IMAGE=${nodeImage}`] : []),
      // Prebuilt, no step may reach the network: its RUN steps get none.
      ...(prebuilt ? ['--build-arg', 'BROKER_TREE=prebuilt', '--network', 'none'] : []),
      '.',
    ],
    // Docker's CLI before 23.0 builds with BuildKit only when asked; later ones ignore this.
    { ...process.env, DOCKER_BUILDKIT: '1' },
  );
} finally {
  if (prebuilt) rmSync(new URL('../.image', import.meta.url), { recursive: true, force: true });
}
const inspect = spawnSync(docker, ['image', 'inspect', '--format', '{{.Id}} {{.Size}}', tags[0]], {
  encoding: 'utf8',
});
const [id, bytes] = inspect.stdout.trim().split(' ');
console.log(`built ${tags.join(' and ')}: ${id}, ${(Number(bytes) / 1_000_000).toFixed(1)} MB`);
