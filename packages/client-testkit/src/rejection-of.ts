import { RicochetError } from '@ricochet/protocol';
import { expect } from 'vitest';

/** The error `promise` rejects with, which must be a RicochetError. */
export async function rejectionOf(promise: Promise<unknown>): Promise<RicochetError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RicochetError);
  return error as RicochetError;
}
