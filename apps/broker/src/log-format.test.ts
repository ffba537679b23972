import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import {
  FASTIFY_LISTENING_TEXT,
  fastifyLogOptions,
  logFormatOf,
  prettyDestination,
  prettyLogLine,
  startLine,
} from './log-format.js';

const AT = Date.UTC(2026, 10, 27, 19, 30, 1, 123);

/** A destination that keeps what it is given, one entry per line. */
function capture() {
  const lines: string[] = [];
  return {
    lines,
    write(text: string) {
      lines.push(...text.split('\n').filter((line) => line !== ''));
    },
  };
}

describe('logFormatOf', () => {
  it('is what --log-format says, else pretty on a terminal and JSON elsewhere', () => {
    expect(logFormatOf('json', true)).toBe('json');
    expect(logFormatOf('pretty', false)).toBe('pretty');
    expect(logFormatOf(undefined, true)).toBe('pretty');
    expect(logFormatOf(undefined, false)).toBe('json');
  });
});

describe('prettyLogLine', () => {
  it('writes time, level and message, then every other field, less pid and hostname', () => {
    expect(
      prettyLogLine({
        level: 30,
        time: AT,
        pid: 7,
        hostname: 'vm',
        store: 'data in ./ricochet-data',
        queues: 1,
        msg: 'store opened',
      }),
    ).toBe('2026-11-27T19:30:01.123Z INFO  store opened store="data in ./ricochet-data" queues=1');
  });

  it('keeps bare words bare and quotes anything a space or an equals sign could split', () => {
    expect(
      prettyLogLine({
        level: 40,
        time: AT,
        msg: 'request refused: no token',
        where: '/v1/topics',
        reason: 'missing_token',
        note: 'a=b',
        ok: false,
        list: [1, 2],
      }),
    ).toBe(
      '2026-11-27T19:30:01.123Z WARN  request refused: no token where=/v1/topics reason=missing_token note="a=b" ok=false list=[1,2]',
    );
  });

  it("puts an error's stack on the lines below, indented", () => {
    const line = prettyLogLine({
      level: 50,
      time: AT,
      msg: 'store write failed',
      err: { type: 'Error', message: 'disk full', stack: 'Error: disk full\n    at write (store.ts:1:1)' },
    });
    expect(line.split('\n')).toEqual([
      '2026-11-27T19:30:01.123Z ERROR store write failed',
      '    Error: disk full',
      '    at write (store.ts:1:1)',
    ]);
  });
});

describe('prettyDestination', () => {
  it('rewrites each JSON line pino writes, and passes anything else through', () => {
    const out = capture();
    const destination = prettyDestination(out);
    destination.write(`${JSON.stringify({ level: 20, time: AT, msg: 'one' })}\n`);
    destination.write('not json\n');
    expect(out.lines).toEqual(['2026-11-27T19:30:01.123Z DEBUG one', 'not json']);
  });
});

describe('startLine', () => {
  const text = 'ricochet-broker listening on ws://127.0.0.1:7720 (data in ./ricochet-data)';

  it('is the text alone in pretty form, and the same text as an info record in JSON', () => {
    expect(startLine('pretty', text, { endpoints: ['ws://127.0.0.1:7720'] }, AT)).toBe(text);
    expect(JSON.parse(startLine('json', text, { endpoints: ['ws://127.0.0.1:7720'] }, AT))).toEqual({
      level: 30,
      time: AT,
      endpoints: ['ws://127.0.0.1:7720'],
      msg: text,
    });
  });
});

describe("the broker's Fastify logger", () => {
  async function requestLines(level: 'info' | 'debug', format: 'json' | 'pretty') {
    const out = capture();
    const app = Fastify(fastifyLogOptions({ logLevel: level, logFormat: format }, out, false));
    app.get('/healthz', () => ({ status: 'ok' }));
    await app.listen({ port: 0, host: '127.0.0.1', listenTextResolver: () => FASTIFY_LISTENING_TEXT });
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      await (await fetch(`http://127.0.0.1:${port}/healthz`)).text();
      app.log.info({ queue: 3 }, 'a state change');
    } finally {
      await app.close();
    }
    return out.lines;
  }

  it('at info: no line per request, and no listening line of its own', async () => {
    const lines = (await requestLines('info', 'json')).map((line) => JSON.parse(line) as { msg: string });
    expect(lines.map((line) => line.msg)).toEqual(['a state change']);
  });

  it('at debug: one line per completed request, with its method, path, status and time', async () => {
    const lines = (await requestLines('debug', 'json')).map(
      (line) => JSON.parse(line) as Record<string, unknown>,
    );
    const requests = lines.filter((line) => line.msg === 'request completed');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ level: 20, method: 'GET', url: '/healthz', statusCode: 200 });
    expect(requests[0]?.responseTimeMs).toBeTypeOf('number');
  });

  it('writes the same records pretty, with the same fields', async () => {
    const lines = await requestLines('debug', 'pretty');
    expect(lines.find((line) => line.includes('request completed'))).toMatch(
      /^\S+Z DEBUG request completed reqId=\S+ method=GET url=\/healthz statusCode=200 responseTimeMs=[\d.]+$/,
    );
    expect(lines.find((line) => line.includes('a state change'))).toMatch(
      /^\S+Z INFO {2}a state change queue=3$/,
    );
  });
});
