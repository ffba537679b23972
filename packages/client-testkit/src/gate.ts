/** A promise the test settles from outside, e.g. to hold a listener until it has checked something. */
export function gate<T = void>(): { readonly promise: Promise<T>; readonly open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
