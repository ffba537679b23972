import type { BenchStore } from '../bench-store.js';

/** Where the benched brokers keep their state, as `pnpm bench` and `pnpm bench:profile` are told. */
export interface StoreChoice {
  /** `--store lmdb|postgres`. @default 'lmdb' */
  store: BenchStore;
  /** How many queues a PostgreSQL store is split into (`--store-queues N`, with `--store postgres`). @default 1 */
  storeQueues: number;
  /**
   * Over how many brokers the queues are spread (`--store-spread N`, with `--store postgres` and
   * `--store-queues` 2 or more): the clients use the first, which forwards to the others. @default 1
   */
  spreadBrokers: number;
}

export function defaultStoreChoice(): StoreChoice {
  return { store: 'lmdb', storeQueues: 1, spreadBrokers: 1 };
}

/**
 * Read `argv[i]` into `choice` if it is a store flag (`--store`, `--store-queues`, `--store-spread`,
 * each also as `--flag=value`): the index of the flag's last word, or `undefined` for any other
 * argument. `--store` takes lmdb or postgres, `--store-queues` 1–64, `--store-spread` 2–8 brokers.
 * @throws what `fail` makes of a message saying what was wrong with a value.
 */
export function readStoreFlag(
  argv: readonly string[],
  i: number,
  choice: StoreChoice,
  fail: (message: string) => Error,
): number | undefined {
  const arg = (argv[i] ?? '').toLowerCase();
  const flag = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
  if (flag !== '--store' && flag !== '--store-queues' && flag !== '--store-spread') return undefined;
  const inline = flag !== arg;
  const value = inline ? arg.slice(flag.length + 1) : argv[i + 1]?.toLowerCase();
  const last = inline ? i : i + 1;
  if (flag === '--store') {
    if (value !== 'lmdb' && value !== 'postgres')
      throw fail(`--store takes lmdb or postgres, not ${value ?? 'nothing'}`);
    choice.store = value;
  } else if (flag === '--store-queues') {
    choice.storeQueues = Number(value);
    if (!Number.isInteger(choice.storeQueues) || choice.storeQueues < 1 || choice.storeQueues > 64) {
      throw fail(`--store-queues takes a whole number from 1 to 64, not ${value ?? 'nothing'}`);
    }
  } else {
    choice.spreadBrokers = Number(value);
    if (!Number.isInteger(choice.spreadBrokers) || choice.spreadBrokers < 2 || choice.spreadBrokers > 8) {
      throw fail(`--store-spread takes a number of brokers from 2 to 8, not ${value ?? 'nothing'}`);
    }
  }
  return last;
}

/** Refuse store flags that do not go together. @throws what `fail` makes of the reason. */
export function checkStoreChoice(choice: StoreChoice, fail: (message: string) => Error): void {
  if (choice.storeQueues > 1 && choice.store !== 'postgres') {
    throw fail('--store-queues splits a PostgreSQL store: add --store postgres');
  }
  if (choice.spreadBrokers > 1 && choice.storeQueues < 2) {
    throw fail('--store-spread spreads the queues of a split store: add --store-queues N (2 or more)');
  }
}
