import { z } from 'zod';

/** `limit` of every paged admin listing: 1–1000 items, 100 when omitted. */
export const pageLimitSchema = z.coerce.number().int().min(1).max(1_000).default(100);

/**
 * The cursor of a listing by name: the last name of the previous page, base64url-encoded. Names of
 * DLQ topics hold `%` (`%DLQ%billing`), which a client pasting the cursor into a query string
 * unencoded would turn into other bytes; base64url needs no encoding, and the client treats the
 * cursor as opaque anyway.
 */
export function encodeNameCursor(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

/** The name a cursor of {@link encodeNameCursor} carries. */
export function decodeNameCursor(cursor: string): string {
  return Buffer.from(cursor, 'base64url').toString('utf8');
}

/** The `cursor` of a listing's answer: where the next page starts, or `null` after the last page. */
export function nextNameCursor(lastName: string | null): string | null {
  return lastName === null ? null : encodeNameCursor(lastName);
}

/** A cursor {@link encodeNameCursor} could have made; Node's decoder skips what it cannot read. */
function isNameCursor(cursor: string): boolean {
  return encodeNameCursor(decodeNameCursor(cursor)) === cursor;
}

/**
 * `?cursor=&limit=` of `GET /v1/topics` and `GET /v1/groups`. An absent or empty cursor starts at
 * the first name; a page continues strictly after the name its cursor carries.
 */
export const namePageQuerySchema = z.object({
  cursor: z
    .string()
    .max(512)
    .refine(isNameCursor, 'not a cursor this broker returned')
    .transform((cursor) => (cursor === '' ? undefined : decodeNameCursor(cursor)))
    .optional(),
  limit: pageLimitSchema,
});
