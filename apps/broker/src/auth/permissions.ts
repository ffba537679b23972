import type { AdminLevel, Principal } from './auth-file.js';
import { matchesAnyNamePattern, matchesNamePattern } from './name-pattern.js';

/**
 * What a request asks to do, as the permission check sees it. The check needs nothing but the
 * names the request carries, so it runs before the broker looks anything up: a refusal never
 * tells whether the topic or group exists.
 */
export type Action =
  /** `send` to one topic. */
  | { readonly type: 'publish'; readonly topic: string }
  /** subscribe, register, receive, or settle a delivery: `group` reading every one of `topics`. */
  | { readonly type: 'consume'; readonly group: string; readonly topics: readonly string[] }
  /** The admin API: `read` for a GET, `write` for a PUT or POST. */
  | { readonly type: 'admin'; readonly level: AdminLevel }
  /** `GET /metrics`. */
  | { readonly type: 'metrics' }
  /** `GET /v1/events` (X7): any principal; each sees the events of the groups it may read ({@link mayReadGroup}). */
  | { readonly type: 'events' }
  /** A RocketMQ client's route of a topic (`QueryRoute`): whoever may publish to it or read it. */
  | { readonly type: 'route'; readonly topic: string };

/** Whether `principal` may take `action`. */
export function isPermitted(principal: Principal, action: Action): boolean {
  switch (action.type) {
    case 'publish':
      return matchesAnyNamePattern(principal.publish, action.topic);
    case 'consume':
      // One grant must cover the group and every topic: two grants do not combine into a third.
      return principal.consume.some(
        (grant) =>
          matchesNamePattern(grant.group, action.group) &&
          action.topics.every((topic) => matchesAnyNamePattern(grant.topics, topic)),
      );
    case 'admin':
      return principal.admin === 'write' || (principal.admin === 'read' && action.level === 'read');
    case 'metrics':
      return principal.metrics;
    case 'events':
      return true;
    case 'route':
      return (
        matchesAnyNamePattern(principal.publish, action.topic) ||
        principal.consume.some((grant) => matchesAnyNamePattern(grant.topics, action.topic))
      );
  }
}

/** The action in words, for a 403's message and the log: it names only what the caller sent. */
export function describeAction(action: Action): string {
  switch (action.type) {
    case 'publish':
      return `publish to topic "${action.topic}"`;
    case 'consume':
      return `consume ${action.topics.map((topic) => `"${topic}"`).join(', ')} as group "${action.group}"`;
    case 'admin':
      return action.level === 'read' ? 'read the admin API' : 'change anything through the admin API';
    case 'metrics':
      return 'read the metrics';
    case 'events':
      return 'follow the events';
    case 'route':
      return `look up the route of topic "${action.topic}"`;
  }
}

/**
 * Whether `principal` may read what happens to `group` (X7's events): an admin reader may read
 * every group through the admin API; anyone else, the groups one of its consume grants names.
 */
export function mayReadGroup(principal: Principal, group: string): boolean {
  return (
    principal.admin !== undefined || principal.consume.some((grant) => matchesNamePattern(grant.group, group))
  );
}
