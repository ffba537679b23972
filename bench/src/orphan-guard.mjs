// Preloaded into every Node process the bench starts (`node --import ./orphan-guard.mjs`), so the
// processes carry no bench code: a process whose bench died without stopping it (killed, crashed,
// or ended by a closed output pipe, as `pnpm bench … | head` does) is adopted by another process
// and would otherwise run on, an idle broker's timers and probes taking CPU from every later run
// on the machine. Once its parent is no longer the process that started it, it ends itself with
// SIGTERM, so a broker shuts down as it does when the bench stops it. The bench names itself in
// RICOCHET_BENCH_PARENT_PID: a bench that died while this process was still starting had already
// handed it to another parent, which `process.ppid` alone would take for the bench.
const CHECK_EVERY_MS = 1_000;
const parent = Number(process.env.RICOCHET_BENCH_PARENT_PID ?? process.ppid);

setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
}, CHECK_EVERY_MS).unref();
