/**
 * A source of uniformly distributed numbers in [0, 1). Injected wherever core needs
 * randomness (jitter), so that tests can pin it.
 */
export type Random = () => number;

/** `Math.random`, the default {@link Random}. */
export const systemRandom: Random = () => Math.random();

/**
 * A deterministic {@link Random} from a 32-bit seed (mulberry32): the same seed draws the same
 * numbers, so a test that draws jitter or random inputs can replay a failure from its seed. Not
 * for anything that must be unpredictable.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
