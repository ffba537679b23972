import { createConnection, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * A TCP relay that is the link to PostgreSQL in the partition tests, run in the database's
 * namespace (`ip netns exec … node --import tsx delay-link.ts <listenHost> <listenPort> <toPort>`):
 * it listens on the namespace's address and relays to the server on its 127.0.0.1. The test
 * machines' kernel has no `sch_netem` and no tc actions (only pfifo, tbf and htb), so the slow,
 * lossy link of case (c) is made here: every chunk each way waits `delayMs / 2` (so a round trip
 * takes `delayMs` more), and with probability `lossRate` another 200 ms, the wait of a TCP
 * retransmission (Linux's minimum RTO) after a lost segment. Chunks keep their order each way, as
 * TCP's in-order delivery does (a retransmission holds back what follows it).
 *
 * Commands on stdin, one per line, each answered `ok` on stdout: `delay <ms> <lossRate>`.
 */
const [listenHost = '127.0.0.1', listenPort = '0', toPort = '5432'] = process.argv.slice(2);
/** Linux's minimum retransmission timeout: what a lost segment costs a TCP stream at least. */
const RETRANSMIT_MS = 200;
let delayMs = 0;
let lossRate = 0;

function relay(from: Socket, to: Socket): void {
  // Chunks still held, oldest first: a chunk goes straight through only when none is, so the
  // stream's order holds across a change of delay (a timer due now may not have fired yet).
  const held: { readonly chunk: Buffer; readonly dueAt: number }[] = [];
  let ended = false;
  const flush = () => {
    const now = Date.now();
    while (held.length > 0 && (held[0]?.dueAt ?? 0) <= now) to.write(held.shift()?.chunk ?? Buffer.alloc(0));
    if (held.length > 0) setTimeout(flush, (held[0]?.dueAt ?? now) - now);
    else if (ended) to.end();
  };
  from.on('data', (chunk: Buffer) => {
    if (delayMs === 0 && lossRate === 0 && held.length === 0) {
      to.write(chunk);
      return;
    }
    const lost = Math.random() < lossRate ? RETRANSMIT_MS : 0;
    const dueAt = Math.max(held.at(-1)?.dueAt ?? 0, Date.now() + delayMs / 2 + lost);
    held.push({ chunk, dueAt });
    if (held.length === 1) setTimeout(flush, dueAt - Date.now());
  });
  from.on('end', () => {
    ended = true;
    if (held.length === 0) to.end();
  });
  from.on('error', () => to.destroy());
}

const server = createServer((client) => {
  const upstream = createConnection({ host: '127.0.0.1', port: Number(toPort) });
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  relay(client, upstream);
  relay(upstream, client);
  upstream.on('close', () => client.destroy());
  client.on('close', () => upstream.destroy());
});
server.listen(Number(listenPort), listenHost, () => {
  process.stdout.write(`relaying ${listenHost}:${listenPort} to 127.0.0.1:${toPort}\n`);
});
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, ms, rate] = line.trim().split(/\s+/);
  if (command === 'delay') {
    delayMs = Number(ms);
    lossRate = Number(rate);
    process.stdout.write('ok\n');
  }
});
