// Preloaded into the broker by `pnpm bench:profile` (`node --import ./profile-probe.mjs`), so the
// broker carries no profiling code: SIGTTIN starts V8's CPU profiler (or, with
// RICOCHET_PROFILE_KIND=heap, its sampling heap profiler), SIGTTOU stops it, writes the profile to
// RICOCHET_PROFILE_OUT and prints `profile-written`. Profiling only the measured window keeps the
// set-up (pre-publishing, JIT warm-up) out of the figures.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const SAMPLING_INTERVAL_US = 250;
const HEAP_SAMPLING_BYTES = 4_096;
const heap = process.env.RICOCHET_PROFILE_KIND === 'heap';
const session = new Session();
session.connect();

process.on('SIGTTIN', async () => {
  if (heap) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: HEAP_SAMPLING_BYTES,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
    await session.post('Profiler.start');
  }
  process.stdout.write('profile-started\n');
});

process.on('SIGTTOU', async () => {
  const { profile } = heap
    ? await session.post('HeapProfiler.stopSampling')
    : await session.post('Profiler.stop');
  writeFileSync(process.env.RICOCHET_PROFILE_OUT ?? 'broker.cpuprofile', JSON.stringify(profile));
  process.stdout.write('profile-written\n');
});
