import { z } from 'zod';

/**
 * Whether a group holds its deliveries (DESIGN.md §11): its failure-storm breaker (`closed`,
 * `open`, `halfOpen`), the failure ratio of its window now, the time of its next probe while
 * open, and whether an operator paused it by hand.
 */
export const groupPauseViewSchema = z.object({
  state: z.enum(['closed', 'open', 'halfOpen']),
  manuallyPaused: z.boolean(),
  failureRatio: z.number(),
  nextProbeAt: z.number().optional(),
});

/** A group's pause state as the admin API shows it. */
export type GroupPauseView = z.infer<typeof groupPauseViewSchema>;
