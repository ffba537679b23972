import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, repoPath } from './repo-root.js';
import { listTypeScriptFiles, WORKSPACE_GLOBS } from './workspace-packages.js';

/**
 * STYLE.md, "Files of one concern": length is a symptom, not the rule. Past {@link ASK_LINES} lines a
 * file must say which one concern makes it long (below, one line); past {@link MAX_LINES} it holds
 * two, whatever it says. Tests included.
 */
const ASK_LINES = 400;
const MAX_LINES = 600;

/**
 * Every TypeScript file over {@link ASK_LINES} lines, by path from the repository's root, with the
 * concern that makes it long. A file that shrinks back leaves the list with it.
 */
const LONG_FILES: Readonly<Record<string, string>> = {
  'apps/broker/src/engine/lifecycle/effect-applier.ts':
    'the one writer of what core decides (DESIGN.md §1): each effect of a transition, a run of settles’ counters and marks once per run (issue 43), and the records made outside transitions (restart, delays, FIFO parking, redrive), all over the same private state; its once-per-turn flush is the seam a split would take',
  'apps/broker/src/engine/broker-engine.ts':
    'the engine’s one BrokerService: each call of both faces (messaging and admin) carried out over the engine’s parts, which engine-parts.ts builds; the paths, the lifecycle driver, the views and the dispatch live in their folders already, so what is left is one short method per call of the service',
  'apps/broker/src/cluster/routing/partition-router.ts':
    'the broker over a store split into queues: one BrokerService whose every call, of both faces, is routed to a queue or fanned out over them and joined, and the queues replaced as owners change; the fan-outs (queue-fan-out.ts), the joins (merged-views.ts) and the forwarded admin calls (QUEUE_ADMIN_CALLS) live beside it already, so what is left is one method per call of the service',
  'apps/broker/src/gateway/session.ts':
    'one client session: hello, the request switch onto the engine, deliveries and answers within the client’s frame limit, close; the stages every request passes (drain, access, caps, counting, failures) live in gateway/pipeline/ already, shared with the RocketMQ front door',
  'apps/broker/src/gateway/grpc/http2/http2-connection.ts':
    'one HTTP/2 connection’s state machine (RFC 9113 §5, §6): each frame type’s rules and connection errors, the streams it opens and refuses, both flow-control windows and GOAWAY, over one set of private state; the frames’ layout, its output, a stream’s own state and HPACK live beside it already',
  'packages/producer/src/producer.ts':
    'the producer’s one send lifecycle: a message queued, batched per route (its queue owner’s connection or the endpoint broker’s), on the wire, retried under R2/R3 or sent again on a stale route, settled; the options, the retry decision and each connection’s send lane live beside it already',
  'packages/push-consumer/src/push-consumer.ts':
    'the push consumer’s own session: start and close, its subscription made, made again after a reconnect or in another scope, its deliveries into the one listener cache and their results out; owner-link.ts repeats the per-session half for the other owners’ sessions, and one subscription link for both is where a split goes',
  'packages/protocol/src/schemas/frames.ts':
    'the schema of every frame of the wire protocol, client frames then broker frames, each with the TSDoc that docs/protocol/frames.md restates; one table of the protocol, read top to bottom',
};

interface SizedFile {
  readonly file: string;
  readonly lines: number;
}

/** What breaks the rule above, one line each. */
function sizeViolations(files: readonly SizedFile[], reasons: Readonly<Record<string, string>>): string[] {
  const violations: string[] = [];
  const sized = new Map(files.map(({ file, lines }) => [file, lines]));
  for (const { file, lines } of files) {
    if (lines > MAX_LINES) violations.push(`${file}: ${lines} lines, over ${MAX_LINES}: two concerns`);
    else if (lines > ASK_LINES && !reasons[file]?.trim()) {
      violations.push(`${file}: ${lines} lines, over ${ASK_LINES}, and no concern listed for it`);
    }
  }
  for (const file of Object.keys(reasons)) {
    const lines = sized.get(file);
    if (lines === undefined) violations.push(`${file}: listed, but there is no such file`);
    else if (lines <= ASK_LINES) violations.push(`${file}: listed, but ${lines} lines is not long`);
  }
  return violations;
}

/** Every TypeScript file of the workspace's folders (a folder listed twice, like `examples`, once). */
function workspaceFiles(): string[] {
  const roots = new Set(WORKSPACE_GLOBS.map((glob) => glob.replace(/\/\*$/, '').split('/')[0] as string));
  return [...roots].flatMap((root) => listTypeScriptFiles(repoPath(root)));
}

describe('file size (STYLE.md)', () => {
  it(`keeps every TypeScript file at ${MAX_LINES} lines or fewer, and says why one is over ${ASK_LINES}`, () => {
    const files = workspaceFiles();
    expect(files.length).toBeGreaterThan(100);
    const sized = files.map((file) => ({
      file: relative(REPO_ROOT, file).split(sep).join('/'),
      lines: readFileSync(file, 'utf8').split('\n').length - 1,
    }));
    expect(sizeViolations(sized, LONG_FILES)).toEqual([]);
  });

  it('fails a file over the limit, a long file without its concern, and a stale entry', () => {
    const files = [
      { file: 'a.ts', lines: 601 },
      { file: 'b.ts', lines: 450 },
      { file: 'c.ts', lines: 450 },
      { file: 'd.ts', lines: 400 },
      { file: 'e.ts', lines: 300 },
    ];
    const reasons = { 'a.ts': 'one concern', 'c.ts': 'one concern', 'e.ts': 'was long once', 'f.ts': 'gone' };
    expect(sizeViolations(files, reasons)).toEqual([
      'a.ts: 601 lines, over 600: two concerns',
      'b.ts: 450 lines, over 400, and no concern listed for it',
      'e.ts: listed, but 300 lines is not long',
      'f.ts: listed, but there is no such file',
    ]);
  });
});
