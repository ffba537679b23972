import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import {
  type AddressInfo,
  connect,
  createServer as createTcpServer,
  type Socket,
  type Server as TcpServer,
} from 'node:net';
import { FakeBroker } from '@ricochet/client-testkit';
import type { HelloFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { cli, startCli } from './cli-run.fixture.js';
import { EXIT_CODES } from './exit-codes.js';

/**
 * DESIGN.md §7: the CLI sends its token as `Authorization: Bearer <token>` on every admin request
 * and in the WebSocket `hello`, and turns 401 and 403 into their own exit codes. The broker's auth
 * is tested with the broker; here fakes record what the CLI sends and answer as an auth-enabled
 * broker would.
 */

interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

let server: Server | undefined;
let fakeBroker: FakeBroker | undefined;
let splitter: TcpServer | undefined;
/** The splitter's connections, ended with it: a kept-alive fetch connection would hold its close. */
const splitSockets = new Set<Socket>();

afterEach(async () => {
  for (const socket of splitSockets) socket.destroy();
  splitSockets.clear();
  await new Promise<void>((resolve) => (splitter ? splitter.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await fakeBroker?.close();
  server = undefined;
  fakeBroker = undefined;
  splitter = undefined;
});

/**
 * One port in front of two fakes, as the broker has one port for both: a connection whose request
 * is the WebSocket upgrade goes to the fake broker, any other to the fake admin API.
 */
async function onePort(adminUrl: string, webSocketUrl: string): Promise<string> {
  const portOf = (url: string) => Number(new URL(url).port);
  splitter = createTcpServer((socket) => {
    splitSockets.add(socket);
    socket.once('data', (first) => {
      const target = first.toString('latin1').startsWith('GET /v1/ws') ? webSocketUrl : adminUrl;
      const upstream = connect(portOf(target), '127.0.0.1', () => {
        splitSockets.add(upstream);
        upstream.write(first);
        socket.pipe(upstream).pipe(socket);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
  });
  const listening = splitter;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

/** An admin API that records every request and answers each with `status` and a catalogue error. */
async function fakeAdmin(status: number): Promise<{ url: string; requests: RecordedRequest[] }> {
  const requests: RecordedRequest[] = [];
  server = createServer((request, response) => {
    requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
    request.resume();
    const name = status === 401 ? 'UNAUTHORIZED' : status === 403 ? 'FORBIDDEN' : 'OK';
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(
      status >= 400
        ? JSON.stringify({ error: { code: status, name, message: `${name.toLowerCase()} by the fake` } })
        : JSON.stringify({ groups: [], cursor: null }),
    );
  });
  const listening = server;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`, requests };
}

describe('the token', () => {
  it('goes as a bearer token on admin requests, from --token or RICOCHET_TOKEN', async () => {
    const admin = await fakeAdmin(200);
    expect((await cli(['groups', 'ls', '--endpoint', admin.url, '--token', 's3cret'])).code).toBe(
      EXIT_CODES.OK,
    );
    expect(
      (await cli(['groups', 'ls'], { env: { RICOCHET_ENDPOINT: admin.url, RICOCHET_TOKEN: 'from-env' } }))
        .code,
    ).toBe(EXIT_CODES.OK);
    expect((await cli(['groups', 'ls', '--endpoint', admin.url])).code).toBe(EXIT_CODES.OK);
    expect(admin.requests.map((request) => request.headers.authorization)).toEqual([
      'Bearer s3cret',
      'Bearer from-env',
      undefined,
    ]);
    expect(admin.requests[0]?.url).toBe('/v1/groups?limit=1000');
  });

  it('turns 401 into exit 3, saying how to pass a token', async () => {
    const admin = await fakeAdmin(401);
    const run = await cli(['topics', 'ls', '--endpoint', admin.url]);
    expect(run.code).toBe(EXIT_CODES.UNAUTHORIZED);
    expect(run.stderr).toContain(
      'error: the broker refused GET /v1/topics?limit=1000: unauthorized by the fake',
    );
    expect(run.stderr).toContain(
      'hint: this broker needs a token: pass --token <token> or set RICOCHET_TOKEN',
    );
    const withToken = await cli(['topics', 'ls', '--endpoint', admin.url, '--token', 'wrong']);
    expect(withToken.stderr).toContain('the broker does not know this token');
  });

  it('turns 403 into exit 4, naming the permission needed; --json reports it as JSON on stderr', async () => {
    const admin = await fakeAdmin(403);
    const run = await cli([
      'groups',
      'set',
      'billing',
      'maxRetries=1',
      '--replace',
      '--endpoint',
      admin.url,
      '--token',
      't',
    ]);
    expect(run.code).toBe(EXIT_CODES.FORBIDDEN);
    expect(run.stderr).toContain('hint: it needs "admin": "write" in the broker\'s --auth-file');
    expect(admin.requests[0]).toMatchObject({ method: 'PUT', headers: { authorization: 'Bearer t' } });

    const json = await cli(['groups', 'ls', '--json', '--endpoint', admin.url, '--token', 't']);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: { exitCode: EXIT_CODES.FORBIDDEN, kind: 'FORBIDDEN' },
    });
    expect(json.stdout).toBe('');
  });

  it('goes in the WebSocket hello of send, and a refused hello exits 3', async () => {
    const hellos: HelloFrame[] = [];
    fakeBroker = await FakeBroker.start({
      onHello: (hello) => {
        hellos.push(hello);
        return hello.token === 'good' ? undefined : { code: 401, message: 'unknown token' };
      },
    });
    const endpoint = ['--endpoint', fakeBroker.endpoint];
    const sent = await cli(['send', 'orders', '--body', 'x', '--token', 'good', ...endpoint]);
    expect(sent.code).toBe(EXIT_CODES.OK);
    const refused = await cli(['send', 'orders', '--body', 'x', '--token', 'bad', ...endpoint]);
    expect(refused.code).toBe(EXIT_CODES.UNAUTHORIZED);
    expect(refused.stderr).toContain('unknown token (code 401)');
    expect(hellos.map((hello) => hello.token)).toEqual(['good', 'bad']);
  });

  it('ends a running tail with exit 3 when the broker stops accepting its token on a reconnect', async () => {
    let accepted = 0;
    fakeBroker = await FakeBroker.start({
      onHello: () => (accepted++ === 0 ? undefined : { code: 401, message: 'token revoked' }),
    });
    const admin = await fakeAdmin(404);
    const endpoint = await onePort(admin.url, fakeBroker.endpoint);
    const tail = startCli(['tail', 'orders', '--group', 'watchers', '--endpoint', endpoint, '--token', 'tk']);
    await tail.stderr.until(/^tailing orders/m);
    fakeBroker.sessions[0]?.drop();
    const run = await tail.done;
    expect(run.code).toBe(EXIT_CODES.UNAUTHORIZED);
    expect(run.stderr).toMatch(/^tail: connection lost.*; reconnecting$/m);
    expect(run.stderr).toContain('error: token revoked (code 401)');
  });

  it('goes in the WebSocket hello of tail and on its admin request', async () => {
    const hellos: HelloFrame[] = [];
    fakeBroker = await FakeBroker.start({
      onHello: (hello) => {
        hellos.push(hello);
        return { code: 403, message: 'may not consume' };
      },
    });
    const admin = await fakeAdmin(404); // the tail group does not exist yet: tail creates it
    const endpoint = await onePort(admin.url, fakeBroker.endpoint);
    const run = await cli(['tail', 'orders', '--group', 'watchers', '--endpoint', endpoint, '--token', 'tk']);
    expect(run.code).toBe(EXIT_CODES.FORBIDDEN);
    expect(run.stderr).toContain('may not consume (code 403)');
    expect(hellos.map((hello) => hello.token)).toEqual(['tk']);
    expect(admin.requests.map((request) => [request.url, request.headers.authorization])).toEqual([
      ['/v1/groups/watchers', 'Bearer tk'],
    ]);
  });
});
