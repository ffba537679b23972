/**
 * A source of uniformly distributed numbers in [0, 1). Injected wherever core needs
 * randomness (jitter), so that tests can pin it.
 */
export type Random = () => number;

/** `Math.random`, the default {@link Random}. */
export const systemRandom: Random = () => Math.random();
