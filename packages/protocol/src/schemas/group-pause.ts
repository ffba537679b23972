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
  /**
   * The counted outcomes of the window now, while the rule is on: with queues spread over brokers,
   * what each queue tells the others so that the rule trips on the whole group (DESIGN.md §9).
   */
  counted: z.object({ successes: z.number(), failures: z.number() }).optional(),
});

/** A group's pause state as the admin API shows it. */
export type GroupPauseView = z.infer<typeof groupPauseViewSchema>;
