/**
 * MurmurHash3's 32-bit finaliser: every bit of the input flips each bit of the output with
 * probability ½. What turns a cheap hash (FNV-1a) into well-spread bits: the dedup filter's probe
 * positions, and the scores of rendezvous hashing (`cluster/membership/queue-assignment.ts`). Unsigned.
 */
export function fmix32(input: number): number {
  let hash = input;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
