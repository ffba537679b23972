import { fmix32 } from './murmur-finaliser.js';

/** Bits of filter per id: with {@link PROBES} probes in a 512-bit block, about 0.1 % false positives per generation. */
const BITS_PER_ID = 14;
/** Bits set and tested per id, all in one 512-bit block (one cache line). */
const PROBES = 7;
const WORDS_PER_BLOCK = 16;
/** The smallest generation, in ids: 448 KiB. */
const MIN_GENERATION_IDS = 1 << 18;
/** The largest generation, in ids: 7 MiB. */
const MAX_GENERATION_IDS = 1 << 22;

/** Options of {@link DedupFilter}. */
export interface DedupFilterOptions {
  /** The dedup window (R3), in ms: an id stored longer ago than this is no duplicate. */
  readonly windowMs: number;
  /**
   * The most memory the filter may hold, in bytes. Past it the oldest generation is dropped, and
   * the filter answers "maybe" for every id until the ids it held have left the window.
   * @default 64 MiB (about 38 million ids: the default 5-minute window at over 100,000 sends a second)
   */
  readonly maxBytes?: number;
}

/** The ids added during one span of time, as a blocked Bloom filter. */
interface Generation {
  readonly words: Uint32Array;
  readonly blocks: number;
  readonly capacity: number;
  count: number;
  /** When the newest of its ids was added: once this leaves the window, so have all of them. */
  lastAtMs: number;
  readonly startedAtMs: number;
  /** Pins taken while it was the newest: it and every newer generation stay while any is held. */
  pins: number;
}

/** What {@link DedupFilter.pin} returns, for {@link DedupFilter.unpin}. */
export type DedupFilterPin = object;

/**
 * Which message ids the send path may have stored within the dedup window (R3), so that a new id —
 * nearly every send — is told apart without reading the store's id index.
 *
 * A Bloom filter: `mayHold` answers `false` only for an id certainly not added within the window,
 * and `true` for every id added (and, a few times in a thousand, for one that was not); the caller
 * reads the index then, as it did for every send before. Ids are kept in generations, each
 * covering half the window or the ids it was sized for, and a generation is dropped once
 * its newest id has left the window. Generations grow with the send rate, up to `maxBytes`.
 *
 * The filter knows only what was added to it. Ids stored before it existed (by an earlier run of
 * the broker) or dropped from it to stay within `maxBytes` are covered by {@link blindUntil}: the
 * filter answers `true` for everything until the newest of them has left the window.
 */
export class DedupFilter {
  readonly #windowMs: number;
  readonly #spanMs: number;
  readonly #maxBytes: number;
  readonly #generations: Generation[] = [];
  #bytes = 0;
  /** Until this time (ms) the filter cannot rule any id out. */
  #blindUntilMs = Number.NEGATIVE_INFINITY;

  constructor(options: DedupFilterOptions) {
    this.#windowMs = options.windowMs;
    this.#spanMs = Math.max(1, options.windowMs / 2);
    this.#maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  }

  /** The bytes the filter holds now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Ids unknown to the filter may have been stored up to `storedAtMs` (an earlier run's newest
   * message): answer "maybe" for every id until that time has left the window.
   */
  blindUntil(storedAtMs: number): void {
    this.#blindUntilMs = Math.max(this.#blindUntilMs, storedAtMs + this.#windowMs);
  }

  /**
   * Keep every id added from now on until {@link unpin}, whatever the window says: the send path
   * pins a batch's ids until they are durable, so that `mayHold` answers `true` for a send still
   * pending — which it then looks up in memory — even with a window shorter than a commit.
   */
  pin(nowMs: number): DedupFilterPin {
    const current = this.#current(nowMs);
    current.pins++;
    return current;
  }

  unpin(pin: DedupFilterPin): void {
    (pin as Generation).pins--;
  }

  /** Remember that `id` was stored at `nowMs`. */
  add(id: string, nowMs: number): void {
    const current = this.#current(nowMs);
    hashId(id);
    const base = (blockHash % current.blocks) * WORDS_PER_BLOCK;
    const { words } = current;
    for (const bit of probeBits) {
      words[base + (bit >>> 5)] = (words[base + (bit >>> 5)] as number) | (1 << (bit & 31));
    }
    current.count++;
    if (nowMs > current.lastAtMs) current.lastAtMs = nowMs;
  }

  /**
   * `false` when `id` was certainly not added within the window that ends at `nowMs`, nor since
   * the oldest pin still held.
   */
  mayHold(id: string, nowMs: number): boolean {
    if (nowMs < this.#blindUntilMs) return true;
    this.#expire(nowMs);
    if (this.#generations.length === 0) return false;
    hashId(id);
    for (const { words, blocks } of this.#generations) {
      const base = (blockHash % blocks) * WORDS_PER_BLOCK;
      let held = true;
      for (const bit of probeBits) {
        if (((words[base + (bit >>> 5)] as number) & (1 << (bit & 31))) === 0) {
          held = false;
          break;
        }
      }
      if (held) return true;
    }
    return false;
  }

  /** The generation new ids go to: the newest, or a new one when it is full or its span is over. */
  #current(nowMs: number): Generation {
    this.#expire(nowMs);
    const newest = this.#generations.at(-1);
    if (newest !== undefined && newest.count < newest.capacity && nowMs - newest.startedAtMs < this.#spanMs) {
      return newest;
    }
    return this.#open(newest, nowMs);
  }

  /** Drop the generations whose ids have all left the window, oldest first, up to the first one pinned. */
  #expire(nowMs: number): void {
    const generations = this.#generations;
    for (let oldest = generations[0]; oldest !== undefined; oldest = generations[0]) {
      if (oldest.pins > 0 || oldest.lastAtMs + this.#windowMs > nowMs) return;
      this.#drop();
    }
  }

  #drop(): Generation | undefined {
    const dropped = this.#generations.shift();
    if (dropped) this.#bytes -= dropped.words.byteLength;
    return dropped;
  }

  /** Start a generation sized for the rate the previous one saw, dropping old ones past `maxBytes`. */
  #open(previous: Generation | undefined, nowMs: number): Generation {
    let ids = MIN_GENERATION_IDS;
    if (previous !== undefined) {
      // Filled before its span ended: the rate outgrew it. Else the next span sees about as many.
      const wanted = previous.count >= previous.capacity ? previous.capacity * 4 : previous.count * 1.25;
      while (ids < wanted && ids < MAX_GENERATION_IDS) ids *= 2;
    }
    // A quarter of the memory at most, so that a limit past which generations are dropped holds several.
    while (ids > MIN_GENERATION_IDS && bytesFor(ids) > this.#maxBytes / 4) ids /= 2;
    const blocks = blocksFor(ids);
    const generation: Generation = {
      words: new Uint32Array(blocks * WORDS_PER_BLOCK),
      blocks,
      capacity: ids,
      count: 0,
      lastAtMs: nowMs,
      startedAtMs: nowMs,
      pins: 0,
    };
    this.#bytes += generation.words.byteLength;
    // Its ids may still be inside the window: rule nothing out until they have left it. A pinned
    // generation stays, past the limit if need be: it holds sends not yet durable.
    while (this.#bytes > this.#maxBytes && (this.#generations[0]?.pins ?? 1) === 0) {
      const dropped = this.#drop();
      if (dropped) this.blindUntil(dropped.lastAtMs);
    }
    this.#generations.push(generation);
    return generation;
  }
}

/** The 512-bit blocks a generation of `ids` ids takes. */
function blocksFor(ids: number): number {
  return Math.ceil((ids * BITS_PER_ID) / (WORDS_PER_BLOCK * 32));
}

function bytesFor(ids: number): number {
  return blocksFor(ids) * WORDS_PER_BLOCK * 4;
}

/**
 * The block of the last id given to {@link hashId}, and the {@link PROBES} bits it sets in a block:
 * module state, so hashing allocates nothing, and every generation is probed at the same bits.
 */
let blockHash = 0;
const probeBits = new Uint16Array(PROBES);
/** The id they are of: the send path asks `mayHold` and then `add` for the same id, hashed once. */
let hashedId: string | undefined;

/**
 * Two independent 32-bit hashes of `id`'s UTF-16 code units in one pass, each finished by
 * Murmur3's finaliser: an FNV-style one picks the block, a multiply-xorshift one the bits in it.
 */
function hashId(id: string): void {
  if (id === hashedId) return;
  hashedId = id;
  const length = id.length;
  let first = 0x811c9dc5 ^ length;
  let second = 0x9747b28c;
  // Two UTF-16 units a step (ids are 32 of them): half the multiplications.
  let index = 0;
  for (; index + 1 < length; index += 2) {
    const units = id.charCodeAt(index) | (id.charCodeAt(index + 1) << 16);
    first = Math.imul(first ^ units, 0x01000193);
    second = Math.imul(second ^ units, 0x5bd1e995);
    second ^= second >>> 15;
  }
  if (index < length) {
    const unit = id.charCodeAt(index);
    first = Math.imul(first ^ unit, 0x01000193);
    second = Math.imul(second ^ unit, 0x5bd1e995);
  }
  blockHash = fmix32(first);
  // Three 9-bit positions in the 512-bit block from each 32 bits of hash.
  let bits = fmix32(second);
  for (let probe = 0; probe < PROBES; probe++) {
    if (probe % 3 === 0 && probe > 0) bits = fmix32(bits);
    probeBits[probe] = (bits >>> (9 * (probe % 3))) & 511;
  }
}
