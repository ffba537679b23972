/**
 * How long one piece of the engine's work may hold the event loop before it yields to the I/O
 * waiting (docs/architecture.md, "Keeping the event loop responsive"), in ms: a pass of the
 * scheduler or of push dispatch stops once it has run this long, and goes on in a later turn.
 */
export const TURN_BUDGET_MS = 1;

/**
 * The budget of a pass that is catching up on work already late — retries due 10 ms ago or more,
 * a backlog of messages Ready again — in ms: on a loop busy with other work, a 1 ms share lets
 * late work fall further behind.
 */
export const CATCH_UP_TURN_BUDGET_MS = 4;

/** What the budgets are measured on by default: real time, not the schedule's (maybe virtual) clock. */
export const realWorkClock = (): number => performance.now();
