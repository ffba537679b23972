import type { AdminErrorAnswer } from '@ricochet/protocol';
import { accessState, markReadOnly, requireLogin } from './auth';

/** An error answer of the admin API: `{ error: { code, name, message, details?, issues? } }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The catalogue name, e.g. `BAD_REQUEST`, or `HTTP_<status>` for an answer without one. */
    readonly code: string,
    message: string,
    readonly issues: readonly { path: readonly string[]; message: string }[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * Call the admin API of the broker that served this page, with the user's token when there is one.
 * A 401 asks for a token; a 403 on a write marks this principal read-only. Either way the call
 * throws, so a page shows what went wrong.
 */
export async function api<T>(method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const { token } = accessState();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status === 401) requireLogin();
  if (response.status === 403 && method !== 'GET') markReadOnly();
  const text = await response.text();
  const parsed = text === '' ? undefined : (JSON.parse(text) as unknown);
  if (!response.ok) {
    const error = (parsed as Partial<AdminErrorAnswer> | undefined)?.error;
    throw new ApiError(
      response.status,
      error?.name ?? `HTTP_${response.status}`,
      error?.message ?? `${method} ${path} answered ${response.status}`,
      error?.issues ?? [],
    );
  }
  return parsed as T;
}

/** `encodeURIComponent` for one path segment (DLQ topic names hold `%`). */
export const segment = (value: string): string => encodeURIComponent(value);
