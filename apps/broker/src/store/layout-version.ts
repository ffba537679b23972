/**
 * The layout of a data directory: the keys of every database and the stored schema of every value
 * (`schema/` for the records that hold core's types and for messages, `records.ts` for the
 * others).
 *
 * - Version 1: every record a MessagePack value of its stored shape.
 * - Version 2: messages stored as the bytes they are delivered in (`schema/stored-message.ts`).
 *   A broker of layout 2 reads layout 1's message records beside its own, so it opens a layout 1
 *   directory by writing its new version and nothing else; a broker of layout 1 refuses a layout
 *   2 directory (it cannot read the new records).
 *
 * Changing the bytes a broker writes or how it reads them is a new layout: bump this number and
 * give the new broker either a migration from every older version it accepts (run at open, in one
 * write transaction, before any read, ending with the new version written to `meta`) or a refusal
 * here that says which broker can still open the directory. Never a silent change: the golden
 * test of `schema/` fails first. A broker always refuses a newer layout than its own, since it
 * cannot know what a newer broker stored.
 */
export const LAYOUT_VERSION = 2;

/** What opening a store with a given stored layout version must do. */
export type LayoutDecision =
  /** A new store: write the current version. */
  | { readonly action: 'initialise' }
  /** The store has this broker's layout. */
  | { readonly action: 'open' }
  /** An older layout this broker migrates, from version `from` on. */
  | { readonly action: 'migrate'; readonly from: number }
  /** The store must not be opened: neither read nor written. */
  | { readonly action: 'refuse'; readonly reason: string };

/** The layout a broker reads in one kind of store, and how it names that store in a refusal. */
export interface LayoutRules {
  readonly version: number;
  /** The oldest version it migrates; `version` when it migrates none. */
  readonly migratesFrom: number;
  readonly subject: string;
}

/** The embedded store's: a data directory, layout 1 migrated by its version alone. */
const DATA_DIRECTORY: LayoutRules = {
  version: LAYOUT_VERSION,
  migratesFrom: 1,
  subject: 'the data directory',
};

/** Decide from the layout version found in the store (`undefined` in a new one). */
export function decideLayout(found: unknown, rules: LayoutRules = DATA_DIRECTORY): LayoutDecision {
  const { version, migratesFrom, subject } = rules;
  if (found === undefined) return { action: 'initialise' };
  if (found === version) return { action: 'open' };
  if (typeof found !== 'number' || !Number.isSafeInteger(found) || found < 1) {
    return {
      action: 'refuse',
      reason: `${subject}'s layout version ${JSON.stringify(found)} is not one any broker writes`,
    };
  }
  if (found > version) {
    return {
      action: 'refuse',
      reason:
        `${subject} has layout version ${found}, written by a newer broker; this broker reads ` +
        `layout ${version} and cannot downgrade it: run a broker that reads layout ${found}`,
    };
  }
  if (found >= migratesFrom) return { action: 'migrate', from: found };
  return {
    action: 'refuse',
    reason: `${subject} has layout version ${found}; this broker reads layout ${version} and has no migration from it`,
  };
}

/** The data directory's layout is not one this broker can open; nothing was read or written. */
export class LayoutVersionError extends Error {
  /** The version found in the directory. */
  readonly found: unknown;

  constructor(found: unknown, reason: string) {
    super(reason);
    this.name = 'LayoutVersionError';
    this.found = found;
  }
}
