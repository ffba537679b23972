import { createServer, type Server } from 'node:http';
import type { ClusterView } from '@ricochet/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, startCliTestBroker } from './cli-run.fixture.js';
import { queueList, renderCluster } from './commands/cluster.js';
import { EXIT_CODES } from './exit-codes.js';

const A = 'host-a:/var/lib/ricochet';
const B = 'host-b:/var/lib/ricochet';

/** What two brokers on one database with 4 queues answer: A owns every queue, B stands by. */
const VIEW: ClusterView = {
  brokers: [
    {
      brokerId: A,
      advertiseUrl: 'ws://host-a:7720',
      storeQueues: 4,
      expiresInMs: 9_812,
      assignedQueues: [0, 2, 3],
      ownedQueues: [0, 1, 2, 3],
    },
    { brokerId: B, storeQueues: 4, expiresInMs: 9_301, assignedQueues: [1], ownedQueues: [] },
  ],
  queues: [
    { queue: 0, owner: A, epoch: 3, expiresInMs: 9_640, assignedTo: A },
    { queue: 1, owner: A, epoch: 3, expiresInMs: 9_640, assignedTo: B },
    { queue: 2, owner: A, epoch: 2, expiresInMs: 9_655, assignedTo: A },
    { queue: 3, epoch: 0, expiresInMs: 0, assignedTo: A },
  ],
};

/** A stand-in for a broker on PostgreSQL: it answers `GET /v1/cluster` with {@link VIEW}. */
let server: Server;
let endpoint: string[];

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url !== '/v1/cluster') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(VIEW));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  endpoint = ['--endpoint', `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`];
});
afterAll(async () => {
  // The CLI's fetch keeps its connection alive: close it too, or the server waits for it.
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('ricochet cluster', () => {
  it('prints the brokers and the queues as tables, and says when ownership and assignment differ', async () => {
    const run = await cli(['cluster', ...endpoint]);
    expect(run).toMatchObject({ code: EXIT_CODES.OK, stderr: '' });
    expect(run.stdout).toBe(
      [
        'BROKER                    ADVERTISE-URL     QUEUES  ASSIGNED  STANDBY-FOR  OWNED  EXPIRES-IN',
        'host-a:/var/lib/ricochet  ws://host-a:7720       4  0,2-3     -            0-3    10s',
        'host-b:/var/lib/ricochet  -                      4  1         -            -      9s',
        '',
        'QUEUE  OWNER                     EPOCH  LEASE-LEFT  ASSIGNED-TO               STANDBYS',
        '    0  host-a:/var/lib/ricochet      3  10s         host-a:/var/lib/ricochet  -',
        '    1  host-a:/var/lib/ricochet      3  10s         host-b:/var/lib/ricochet  -',
        '    2  host-a:/var/lib/ricochet      2  10s         host-a:/var/lib/ricochet  -',
        '    3  -                             0  -           host-a:/var/lib/ricochet  -',
        '',
        '1 of 4 queues are owned by a broker other than the one assigned: ownership does not follow assignment yet',
        '',
      ].join('\n'),
    );
  });

  it('prints the admin API answer as it is with --json', async () => {
    const run = await cli(['cluster', '--json', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.OK);
    expect(JSON.parse(run.stdout)).toEqual(VIEW);
  });

  it('exits 2, saying why, against a broker on the embedded store', async () => {
    await using broker = await startCliTestBroker();
    const run = await cli(['cluster', '--endpoint', broker.httpUrl]);
    expect(run.code).toBe(EXIT_CODES.NOT_FOUND);
    expect(run.stderr).toMatch(
      /^error: this broker has no cluster: it keeps its data in an embedded store\nhint: /,
    );
  });

  it('takes no arguments', async () => {
    const run = await cli(['cluster', 'ls', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.USAGE);
  });
});

describe('queueList', () => {
  it('writes runs of queues as ranges', () => {
    expect(queueList([])).toBe('-');
    expect(queueList([5])).toBe('5');
    expect(queueList([3, 0, 1, 2, 5, 7, 8])).toBe('0-3,5,7-8');
  });
});

describe('renderCluster with queues spread', () => {
  it("adds the answering broker's own view: the database and each peer, reachable or not", () => {
    const text = renderCluster({
      ...VIEW,
      self: {
        brokerId: A,
        database: {
          reachable: false,
          lastContactAgoMs: 12_400,
          lastError: 'the database did not answer within 2000 ms',
        },
        peers: [{ brokerId: B, url: 'ws://host-b:7720', reachable: false, lastSeenAgoMs: 3_050 }],
      },
    });
    expect(text.split('\n').slice(-4)).toEqual([
      `seen from ${A}: the database UNREACHABLE (last contact 12s ago; the tables above are as old): the database did not answer within 2000 ms`,
      'PEER                      URL               REACHABLE  LAST-SEEN',
      `${B}  ws://host-b:7720  NO         3s ago`,
      '',
    ]);
    const healthy = renderCluster({
      ...VIEW,
      self: { brokerId: B, database: { reachable: true, lastContactAgoMs: 80 }, peers: [] },
    });
    expect(
      healthy.endsWith(`seen from ${B}: the database reachable (last contact 80ms ago)\nno peers\n`),
    ).toBe(true);
  });

  it('names the queues each broker stands by for, and the standbys of each queue', () => {
    const text = renderCluster({
      brokers: [
        {
          brokerId: A,
          storeQueues: 2,
          expiresInMs: 9_000,
          assignedQueues: [0],
          standbyQueues: [1],
          ownedQueues: [0],
        },
        {
          brokerId: B,
          storeQueues: 2,
          expiresInMs: 9_000,
          assignedQueues: [1],
          standbyQueues: [0],
          ownedQueues: [1],
        },
      ],
      queues: [
        { queue: 0, owner: A, epoch: 1, expiresInMs: 9_000, assignedTo: A, standbys: [B] },
        { queue: 1, owner: B, epoch: 1, expiresInMs: 9_000, assignedTo: B, standbys: [A] },
      ],
    });
    expect(text.split('\n')).toEqual([
      'BROKER                    ADVERTISE-URL  QUEUES  ASSIGNED  STANDBY-FOR  OWNED  EXPIRES-IN',
      `${A}  -                   2  0         1            0      9s`,
      `${B}  -                   2  1         0            1      9s`,
      '',
      'QUEUE  OWNER                     EPOCH  LEASE-LEFT  ASSIGNED-TO               STANDBYS',
      `    0  ${A}      1  9s          ${A}  ${B}`,
      `    1  ${B}      1  9s          ${B}  ${A}`,
      '',
    ]);
  });
});
