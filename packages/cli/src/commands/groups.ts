import type { GroupPauseView, GroupView } from '@ricochet/protocol';
import { listAllGroups } from '../admin-paging.js';
import { usageError } from '../cli-error.js';
import type { Command } from '../command.js';
import { stringOption } from '../command.js';
import { type CommandContext, writeJson } from '../command-context.js';
import { currentConfigAt, parseConfigAssignments } from '../config-assignments.js';
import { describeRetryPolicy, formatDurationMs, formatTime } from '../display-format.js';
import { renderFields, renderTable } from '../text-table.js';

const HELP = `Usage:
  ricochet groups ls                          every group with its counts
  ricochet groups get <group>                 one group: its config and counts
  ricochet groups set <group> [field=value…]  create or change a group; fields you do not name keep
                                              their current value (--replace: their default)
  ricochet groups pause <group>               hold every delivery of the group until it is resumed
  ricochet groups resume <group>              deliver again: lifts a pause by hand and closes a
                                              breaker the failure-storm rule opened

Flags:
  --config <json>   fields as one JSON object
  --replace         send only the fields given, so the others take their defaults

Fields: maxRetries, retryPolicy (JSON: {"type":"fixed","delayMs":500}, {"type":"stepped",
"delaysMs":[…]}, {"type":"exponential",…}; any of them with "jitter": 0 to 1), fifo, consumeMode (clustering | broadcasting),
maxRetryDurationMs (a retry budget), maxPostponeMs (how long postpone(ms) may go on; default 1 h),
consumptionTimeoutMs, startFrom (latest | earliest), broadcastInstanceTtlMs, dlqRetentionMs (how
long its DLQ keeps messages; default 14 days), pauseOnFailures (the failure-storm rule, JSON:
{} turns it on with its defaults; fields failureRatio, minOutcomes, windowMs, pauseMs, maxPauseMs),
history (failures | full: whether the delivery history keeps successes; unset, the broker's default),
maxDeliveriesPerSecond (deliveries per second to the group at most, retries included; unset, no limit).

Example:
  ricochet groups set billing maxRetries=3 'retryPolicy={"type":"fixed","delayMs":500}'
`;

export const groupsCommand: Command = {
  name: 'groups',
  synopsis: 'ls | get | set | pause | resume',
  summary: 'list, show, configure, pause and resume consumer groups',
  help: HELP,
  options: { config: { type: 'string' }, replace: { type: 'boolean' } },
  async run(context, { positionals, values }) {
    const [action, group, ...fields] = positionals;
    switch (action) {
      case 'ls':
        return listGroups(context);
      case 'get':
        return showGroup(context, requireGroup(group));
      case 'set':
        return setGroup(
          context,
          requireGroup(group),
          parseConfigAssignments(fields, stringOption(values, 'config'), 'groups'),
          values.replace === true,
        );
      case 'pause':
      case 'resume':
        return pauseGroup(context, requireGroup(group), action);
      default:
        throw usageError(
          action === undefined ? 'groups needs ls, get, set, pause or resume' : `unknown action '${action}'`,
          'groups',
        );
    }
  },
};

function requireGroup(group: string | undefined): string {
  if (group === undefined) throw usageError('name the group', 'groups');
  return group;
}

export function groupPath(group: string): string {
  return `/v1/groups/${encodeURIComponent(group)}`;
}

async function listGroups(context: CommandContext): Promise<undefined> {
  const groups = await listAllGroups(context.admin);
  if (context.json) {
    writeJson(context, groups);
    return undefined;
  }
  if (groups.length === 0) {
    context.io.stdout.write(
      'no groups yet: a consumer creates one, or `ricochet groups set <group> maxRetries=16`\n',
    );
    return undefined;
  }
  const rows = groups.map((group) => [
    group.name,
    group.config.consumeMode + (group.config.fifo ? ' fifo' : ''),
    String(group.config.maxRetries),
    String(group.stats.ready),
    String(group.stats.inflight),
    String(group.stats.waitingRetry),
    String(group.stats.dlq),
    String(group.stats.committed),
    pauseLabel(group.pause),
  ]);
  context.io.stdout.write(
    renderTable(
      ['GROUP', 'MODE', 'MAX-RETRIES', 'READY', 'INFLIGHT', 'WAITING-RETRY', 'DLQ', 'COMMITTED', 'PAUSE'],
      rows,
      {
        rightAligned: [2, 3, 4, 5, 6, 7],
      },
    ),
  );
  return undefined;
}

async function showGroup(context: CommandContext, name: string): Promise<undefined> {
  const group = await context.admin.call('GET /v1/groups/:group', groupPath(name));
  if (context.json) writeJson(context, group);
  else context.io.stdout.write(describeGroup(group));
  return undefined;
}

const SHOWN_FIELDS = new Set([
  'pauseOnFailures',
  'maxRetries',
  'retryPolicy',
  'fifo',
  'consumeMode',
  'consumptionTimeoutMs',
  'startFrom',
  'broadcastInstanceTtlMs',
  'maxDeliveriesPerSecond',
]);

function describeGroup(group: GroupView): string {
  const { config, stats } = group;
  const extra = Object.entries(config).filter(([key]) => !SHOWN_FIELDS.has(key));
  return renderFields([
    ['group', group.name],
    ['consumeMode', config.consumeMode],
    ['fifo', String(config.fifo)],
    ['maxRetries', `${config.maxRetries} (then the DLQ after delivery ${config.maxRetries + 1})`],
    ['retryPolicy', describeRetryPolicy(config.retryPolicy)],
    [
      'consumptionTimeoutMs',
      `${config.consumptionTimeoutMs} (${formatDurationMs(config.consumptionTimeoutMs)})`,
    ],
    ['startFrom', config.startFrom],
    ...(config.broadcastInstanceTtlMs === undefined
      ? []
      : [['broadcastInstanceTtlMs', formatDurationMs(config.broadcastInstanceTtlMs)] as const]),
    ['pauseOnFailures', describePauseOnFailures(config.pauseOnFailures)],
    [
      'maxDeliveriesPerSecond',
      config.maxDeliveriesPerSecond === undefined ? 'no limit' : `${config.maxDeliveriesPerSecond}/s`,
    ],
    ...extra.map(([key, value]) => [key, JSON.stringify(value)] as const),
    [
      'stats',
      `ready ${stats.ready} · inflight ${stats.inflight} · waitingRetry ${stats.waitingRetry} · dlq ${stats.dlq} · committed ${stats.committed}`,
    ],
    ...(group.pause === undefined ? [] : [['pause', describePause(group.pause)] as const]),
  ]);
}

/**
 * A group's pause in one line (DESIGN.md §11): held or delivering and why (by hand, or the
 * failure-storm breaker), the breaker's state, its window's failure ratio and its next probe.
 */
export function describePause(pause: GroupPauseView): string {
  const reasons = [
    ...(pause.manuallyPaused ? ['by hand'] : []),
    ...(pause.state === 'closed' ? [] : ['failures']),
  ];
  const held = reasons.length === 0 ? 'delivering' : `held (${reasons.join(', ')})`;
  const probe = pause.nextProbeAt === undefined ? [] : [`next probe ${formatTime(pause.nextProbeAt)}`];
  return [held, `breaker ${pause.state}`, `failure ratio ${formatRatio(pause.failureRatio)}`, ...probe].join(
    ' · ',
  );
}

function describePauseOnFailures(rule: GroupView['config']['pauseOnFailures']): string {
  if (rule === undefined) return 'off';
  return `pause at ${formatRatio(rule.failureRatio)} failures of ${rule.minOutcomes}+ outcomes in ${formatDurationMs(rule.windowMs)}, probe after ${formatDurationMs(rule.pauseMs)} doubling to ${formatDurationMs(rule.maxPauseMs)}`;
}

/** `-` while the group delivers, else why it holds: `manual`, the breaker's `open` / `halfOpen`, or both. */
function pauseLabel(pause: GroupPauseView | undefined): string {
  if (pause === undefined) return '-';
  const reasons = [
    ...(pause.manuallyPaused ? ['manual'] : []),
    ...(pause.state === 'closed' ? [] : [pause.state]),
  ];
  return reasons.length === 0 ? '-' : reasons.join(',');
}

function formatRatio(ratio: number): string {
  return `${Math.round(ratio * 100)}%`;
}

async function pauseGroup(
  context: CommandContext,
  name: string,
  action: 'pause' | 'resume',
): Promise<undefined> {
  const route = action === 'pause' ? 'POST /v1/groups/:group/pause' : 'POST /v1/groups/:group/resume';
  const group = await context.admin.call(route, `${groupPath(name)}/${action}`, {});
  if (context.json) writeJson(context, group);
  else
    context.io.stdout.write(
      `group ${name} ${action === 'pause' ? 'paused' : 'resumed'}\n${describeGroup(group)}`,
    );
  return undefined;
}

async function setGroup(
  context: CommandContext,
  name: string,
  fields: Record<string, unknown>,
  replace: boolean,
): Promise<undefined> {
  if (Object.keys(fields).length === 0 && !replace) {
    throw usageError('name at least one field=value (or --config)', 'groups');
  }
  const current = replace ? undefined : await currentConfigAt(context, groupPath(name));
  const group = await context.admin.call('PUT /v1/groups/:group', groupPath(name), { ...current, ...fields });
  if (context.json) writeJson(context, group);
  else context.io.stdout.write(`group ${name} saved\n${describeGroup(group)}`);
  return undefined;
}
