import { runW1, W1_MESSAGES } from './workloads/w1-publish.js';
import { runW2s, W2S_MESSAGES } from './workloads/w2s-simple-consume.js';

/**
 * `pnpm bench`: every workload against the broker (a child process, fsync on every commit) and,
 * in the same run, the bare ws + msgpackr reference with the same client pattern.
 * `pnpm bench w1 w2s` runs a subset.
 */
const selected = new Set(process.argv.slice(2).map((name) => name.toLowerCase()));
const wanted = (name: string) => selected.size === 0 || selected.has(name);

function line(name: string, ricochet: number, reference: number, target: string): void {
  const ratio = ricochet / reference;
  console.log(
    `${name.padEnd(34)} ricochet ${Math.round(ricochet).toLocaleString('en').padStart(9)} msg/s   reference ${Math.round(
      reference,
    )
      .toLocaleString('en')
      .padStart(9)} msg/s   ratio ${ratio.toFixed(2)}   (target ${target})`,
  );
}

console.log(`node ${process.version}, ${new Date().toISOString()}`);
if (wanted('w1')) {
  const { ricochet, reference } = await runW1();
  line(`W1 publish (${W1_MESSAGES.toLocaleString('en')} × 256 B)`, ricochet, reference, '≥ 0.85');
}
if (wanted('w2s')) {
  const { ricochet, reference } = await runW2s();
  line(`W2s receive+ack (${W2S_MESSAGES.toLocaleString('en')})`, ricochet, reference, '≥ 0.50');
}
