import { BrokerError } from '@ricochet/protocol';
import type { GrpcCall, GrpcInbound, GrpcWriter } from './grpc-stream-call.js';
import { permitted, type RocketCall, type RocketDeps } from './rocketmq-call.js';
import type { RocketConsumption } from './rocketmq-consumption.js';
import type { RocketStatus, TelemetryCommand } from './rocketmq-schema.js';
import { settingsAnswer } from './rocketmq-settings.js';
import { OK_STATUS, status } from './rocketmq-status.js';

/**
 * `Telemetry`, the client's session: it sends its settings, and its start waits until they are
 * answered with the broker's (every official client blocks on it, Node and Python with no
 * timeout, so an answer always goes out: the settings, or a status saying why not). The stream's
 * life is the client's: when its last one ends, its push deliveries are released (C2).
 */
export function serveTelemetry(
  grpcCall: GrpcCall,
  out: GrpcWriter<TelemetryCommand>,
  call: RocketCall,
  deps: RocketDeps,
  consumption: RocketConsumption,
  failure: (error: unknown) => RocketStatus,
): GrpcInbound<TelemetryCommand> {
  const { clientId } = call;
  if (clientId === undefined) {
    out.write({ status: status('CLIENT_ID_REQUIRED', 'x-mq-client-id is missing') });
    out.end();
    return { message: () => undefined, end: () => undefined };
  }
  consumption.clients.streamOpened(clientId);
  let open = true;
  const closed = () => {
    if (!open) return;
    open = false;
    consumption.clients.streamClosed(clientId);
  };
  grpcCall.onCancelled(closed);
  return {
    message: (command) => {
      if (command.settings === undefined) return;
      answerSettings(command, call, deps)
        .then((answer) => {
          if (open) out.write(answer);
        })
        .catch((error: unknown) => {
          if (open) out.write({ status: failure(error) });
        });
    },
    end: () => {
      closed();
      out.end();
    },
  };
}

/**
 * The broker's answer to a client's settings. A consumer's group is registered first, as
 * Ricochet's own consumers do at start: it exists, and its position in each topic is taken now
 * (`startFrom`), so a message sent after the client started is never missed.
 */
async function answerSettings(
  command: TelemetryCommand,
  call: RocketCall,
  deps: RocketDeps,
): Promise<TelemetryCommand> {
  const settings = command.settings ?? {};
  const subscription = settings.subscription;
  const group = subscription?.group?.name;
  const server = { maxBodyBytes: deps.maxBodyBytes, longPollingTimeoutMs: deps.longPollingTimeoutMs };
  if (subscription === undefined || group === undefined || group === '') {
    return { status: OK_STATUS, settings: settingsAnswer(settings, server) };
  }
  const subscriptions: Record<string, string> = {};
  for (const entry of subscription.subscriptions ?? []) {
    const topic = entry.topic?.name;
    if (topic === undefined || topic === '') continue;
    if (entry.expression?.type === 'SQL') {
      throw BrokerError.of(
        'BAD_REQUEST',
        `topic "${topic}": Ricochet filters by tag only; SQL92 is not served`,
      );
    }
    subscriptions[topic] = entry.expression?.expression || '*';
  }
  const topics = Object.keys(subscriptions);
  if (topics.length > 0) {
    permitted(call.access.checkActions([{ type: 'consume', group, topics }]));
    await deps.engine.register(group, subscriptions);
  }
  const view = await deps.engine.describeGroup(group);
  if (view === undefined) throw BrokerError.of('NOT_FOUND', `group "${group}" does not exist`, { group });
  return { status: OK_STATUS, settings: settingsAnswer(settings, { ...server, group: view.config }) };
}
