/**
 * A relay's owner lookup that never finds an owner (a takeover that has not ended), and a promise
 * that settles at its first call: by then the relay holds the client that caused it.
 */
export function noOwnerYet(): {
  readonly findOwner: () => Promise<undefined>;
  readonly lookedUp: Promise<void>;
} {
  let lookedUp: () => void = () => {};
  const firstLookup = new Promise<void>((resolve) => {
    lookedUp = resolve;
  });
  return {
    findOwner: async () => {
      lookedUp();
      return undefined;
    },
    lookedUp: firstLookup,
  };
}
