import { permitted, type RocketCall, type RocketDeps } from './rocketmq-call.js';
import type {
  Endpoints,
  MessageQueue,
  MessageType,
  QueryAssignmentRequest,
  QueryRouteRequest,
} from './rocketmq-schema.js';
import { OK_STATUS, status } from './rocketmq-status.js';

/** `QueryRoute`: the topic's one queue, for whoever may publish to it or read it. */
export async function queryRoute(deps: RocketDeps, request: QueryRouteRequest, call: RocketCall) {
  const topic = request.topic?.name;
  if (topic === undefined || topic === '') return { status: status('ILLEGAL_TOPIC', 'no topic named') };
  // Permission before anything is looked up: a refusal never tells whether the topic exists.
  permitted(call.access.checkActions([{ type: 'route', topic }]));
  const queue = await queueOf(deps, topic, request.topic?.resourceNamespace ?? '', request.endpoints);
  if ('status' in queue) return queue;
  return { status: OK_STATUS, messageQueues: [queue] };
}

/** `QueryAssignment`: a push consumer of the group is assigned the topic's one queue. */
export async function queryAssignment(deps: RocketDeps, request: QueryAssignmentRequest, call: RocketCall) {
  const topic = request.topic?.name;
  const group = request.group?.name;
  if (topic === undefined || topic === '') return { status: status('ILLEGAL_TOPIC', 'no topic named') };
  if (group === undefined || group === '')
    return { status: status('ILLEGAL_CONSUMER_GROUP', 'no group named') };
  permitted(call.access.checkActions([{ type: 'consume', group, topics: [topic] }]));
  const queue = await queueOf(deps, topic, request.topic?.resourceNamespace ?? '', request.endpoints);
  if ('status' in queue) return queue;
  return { status: OK_STATUS, assignments: [{ messageQueue: queue }] };
}

/**
 * A topic's one queue, as the official clients need it: id 0 (the Node client uses no other),
 * read-write, on a broker whose endpoints are the ones the client reached this broker by, so its
 * sends, receives and Telemetry come back to this broker (as RocketMQ's cluster-mode proxy
 * answers); with queues spread over brokers, this one forwards what another owns. The message
 * types are the topic type's (a normal topic takes delay messages too, DESIGN §2).
 */
async function queueOf(
  deps: RocketDeps,
  topic: string,
  namespace: string,
  endpoints: Endpoints | undefined,
): Promise<MessageQueue | { status: ReturnType<typeof status> }> {
  const view = await deps.engine.describeTopic(topic);
  if (view === undefined && !deps.autoCreateTopics) {
    return { status: status('TOPIC_NOT_FOUND', `topic "${topic}" does not exist`) };
  }
  const type = view?.config.type ?? 'normal';
  const accepted: MessageType[] =
    type === 'fifo' ? ['FIFO'] : type === 'delay' ? ['DELAY'] : ['NORMAL', 'DELAY'];
  return {
    topic: { resourceNamespace: namespace, name: topic },
    id: 0,
    permission: 'READ_WRITE',
    broker: { name: 'ricochet', id: 0, endpoints: endpoints ?? {} },
    acceptMessageTypes: accepted,
  };
}
