import type { FastifyInstance } from 'fastify';
import type { AdminService } from '../engine/index.js';
import { registerAnswerCheck } from './answer-check.js';
import { registerCounterRoutes } from './counter-routes.js';
import { registerDeadLetterRoutes } from './dead-letter-routes.js';
import { type EventStream, registerEventRoutes } from './event-routes.js';
import { registerFifoRoutes } from './fifo-routes.js';
import { registerGroupRoutes } from './group-routes.js';
import { type HealthState, registerHealthRoutes } from './health-routes.js';
import { registerBrokerErrorReplies } from './http-error.js';
import { registerMessageRoutes } from './message-routes.js';
import type { ServiceOf } from './request-scope.js';
import { registerStoreRoutes } from './store-routes.js';
import { registerTopicRoutes } from './topic-routes.js';

/** What the admin API answers from. */
export interface AdminRoutesOptions {
  /** The whole broker's service: health, metrics and counters are the broker's, never one queue's. */
  readonly engine: AdminService;
  /** The service each request of a per-queue route is answered by (`request-scope.ts`). */
  readonly serviceOf: ServiceOf;
  /** What `/healthz` and `/readyz` answer from. */
  readonly health: HealthState;
  /** X7: the engines' events, streamed by `GET /v1/events`. */
  readonly events: EventStream;
}

/**
 * The admin API's routes (`/v1/…`, `/healthz`, `/readyz`, `/metrics`), after its one error handler: routes
 * registered before `setErrorHandler` would not get it. The guard in front of them
 * (`http-access.ts`) and the dashboard (`ui-routes.ts`) are registered by the app.
 */
export function registerAdminRoutes(app: FastifyInstance, options: AdminRoutesOptions): void {
  const { engine, serviceOf } = options;
  registerBrokerErrorReplies(app);
  // Before any route: every answer below, and the cluster's routes the backend adds, is checked.
  registerAnswerCheck(app);
  registerHealthRoutes(app, engine, options.health);
  registerTopicRoutes(app, serviceOf);
  registerGroupRoutes(app, serviceOf);
  registerMessageRoutes(app, serviceOf);
  registerDeadLetterRoutes(app, serviceOf);
  registerFifoRoutes(app, serviceOf);
  registerStoreRoutes(app, serviceOf);
  registerCounterRoutes(app, engine);
  registerEventRoutes(app, options.events);
}
