import { badRequestError, type ClientError } from './client-error.js';

/**
 * What a range check needs of a protocol integer field's schema, such as
 * `receiveFrameSchema.shape.maxMessages`: whether a value passes, and the bounds to name when not.
 */
export interface IntegerFieldSchema {
  safeParse(value: unknown): { readonly success: boolean };
  readonly minValue: number | null;
  readonly maxValue: number | null;
}

/**
 * Check an option or argument that becomes the frame field `schema` describes, against the
 * protocol's own bounds: out of range, it would make the broker refuse the whole frame (400).
 * @throws ClientError `400` naming `name`, its bounds and `value`.
 */
export function checkIntegerField(schema: IntegerFieldSchema, value: number, name: string): void {
  if (!schema.safeParse(value).success) {
    throw outOfRange(
      name,
      schema.minValue ?? Number.MIN_SAFE_INTEGER,
      schema.maxValue ?? Number.MAX_SAFE_INTEGER,
      value,
    );
  }
}

/**
 * Check an integer option the protocol has no field for (`concurrency`, a timeout of the client's).
 * @throws ClientError `400` naming `name`, its bounds and `value`.
 */
export function checkIntegerInRange(value: number, min: number, max: number, name: string): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) throw outOfRange(name, min, max, value);
}

function outOfRange(name: string, min: number, max: number, value: number): ClientError {
  return badRequestError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
}
