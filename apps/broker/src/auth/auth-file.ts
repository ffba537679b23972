import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { NAME_PATTERN_REGEX } from './name-pattern.js';

/** A principal's name: what logs, metrics and delivery history show. Never the token. */
export const PRINCIPAL_NAME_REGEX = /^[A-Za-z0-9_.:@-]{1,128}$/;

const namePatternSchema = z
  .string()
  .regex(NAME_PATTERN_REGEX, 'a pattern is an exact name or a prefix ending in "*" (A–Z a–z 0–9 _ . % -)');

/** `admin`: `read` allows every GET of the admin API; `write` also its PUTs and POSTs. */
export const ADMIN_LEVELS = ['read', 'write'] as const;
export type AdminLevel = (typeof ADMIN_LEVELS)[number];

const consumeGrantSchema = z
  .object({
    /** The groups this grant covers. */
    group: namePatternSchema,
    /** The topics those groups may read (`%DLQ%…` for DLQ topics). */
    topics: z.array(namePatternSchema).min(1),
  })
  .strict();

/**
 * RocketMQ 5 credentials (`--grpc-port`): the access key and secret key an official RocketMQ client
 * signs its requests with (`SessionCredentials`). The broker must hold the secret itself to check
 * an HMAC, as RocketMQ's own ACL file does, so an auth file with these is a secret: keep it 0600.
 */
const rocketmqCredentialsSchema = z
  .object({
    accessKey: z
      .string()
      .regex(/^[A-Za-z0-9_.:@-]{1,128}$/, 'an access key is 1–128 of A–Z a–z 0–9 _ . : @ -'),
    secretKey: z.string().min(16, 'a secret key has at least 16 characters').max(256),
  })
  .strict();

/**
 * One principal as the auth file spells it (DESIGN.md §7). Unknown fields are refused: a typo in
 * a permission must fail loudly, not grant nothing in silence.
 */
const principalSchema = z
  .object({
    name: z.string().regex(PRINCIPAL_NAME_REGEX, 'a name is 1–128 of A–Z a–z 0–9 _ . : @ -'),
    tokenSha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the token, as 64 hex characters')
      .transform((hex) => hex.toLowerCase()),
    publish: z.array(namePatternSchema).default([]),
    consume: z.array(consumeGrantSchema).default([]),
    admin: z.enum(ADMIN_LEVELS).optional(),
    metrics: z.boolean().default(false),
    /** Messages per second this principal may send, over all its connections. @default unlimited */
    publishRatePerSecond: z.number().positive().max(10_000_000).optional(),
    /** The same principal, reached by Apache's RocketMQ 5 clients over `--grpc-port`. @default none */
    rocketmq: rocketmqCredentialsSchema.optional(),
  })
  .strict();

/** The auth file: `{ "principals": [...] }`; names and token digests are unique. */
export const authFileSchema = z
  .object({ principals: z.array(principalSchema) })
  .strict()
  .superRefine((file, context) => {
    const names = new Set<string>();
    const digests = new Set<string>();
    const accessKeys = new Set<string>();
    file.principals.forEach((principal, index) => {
      if (names.has(principal.name))
        context.addIssue({
          code: 'custom',
          path: ['principals', index, 'name'],
          message: 'a second principal with this name',
        });
      if (digests.has(principal.tokenSha256))
        context.addIssue({
          code: 'custom',
          path: ['principals', index, 'tokenSha256'],
          message: 'a second principal with this token',
        });
      const accessKey = principal.rocketmq?.accessKey;
      if (accessKey !== undefined && accessKeys.has(accessKey))
        context.addIssue({
          code: 'custom',
          path: ['principals', index, 'rocketmq', 'accessKey'],
          message: 'a second principal with this access key',
        });
      names.add(principal.name);
      digests.add(principal.tokenSha256);
      if (accessKey !== undefined) accessKeys.add(accessKey);
    });
  });

/** The auth file after validation, with defaults filled. */
export type AuthFile = z.infer<typeof authFileSchema>;
/** A principal after validation: `publish`, `consume` and `metrics` always present. */
export type Principal = AuthFile['principals'][number];
/** One `consume` entry: a group pattern and the topic patterns its groups may read. */
export type ConsumeGrant = Principal['consume'][number];

/** The outcome of reading an auth file: the file, or why it was refused. */
export type AuthFileParse =
  | { readonly ok: true; readonly authFile: AuthFile }
  | { readonly ok: false; readonly message: string };

/** Validate an auth file's text. Every issue is named by its path (`principals[1].tokenSha256`). */
export function parseAuthFile(text: string): AuthFileParse {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = authFileSchema.safeParse(json);
  if (parsed.success) return { ok: true, authFile: parsed.data };
  const issues = parsed.error.issues.map((issue) => `${pathText(issue.path)}: ${issue.message}`);
  return { ok: false, message: issues.join('; ') };
}

/** Read and validate the auth file at `path`; a missing or unreadable file is a refusal too. */
export async function readAuthFile(path: string): Promise<AuthFileParse> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    return {
      ok: false,
      message: `cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  const parsed = parseAuthFile(text);
  return parsed.ok ? parsed : { ok: false, message: `${path}: ${parsed.message}` };
}

function pathText(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(file)';
  return path
    .map((part, index) =>
      typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`,
    )
    .join('');
}
