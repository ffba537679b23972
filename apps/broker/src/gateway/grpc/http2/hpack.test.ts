import type { OutgoingHttpHeaders } from 'node:http2';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeHeaderBlock, HpackDecoder, HpackDecodingError, STATIC_TABLE } from './hpack.js';
import { block, captureRequestBlocks, rep } from './hpack.test-support.js';

const decoder = (maxTableBytes = 4096, maxHeaderListBytes = 1 << 20) =>
  new HpackDecoder({ maxTableBytes, maxHeaderListBytes });

const pairs = (fields: readonly string[]) =>
  Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]]);

describe('HpackDecoder against node:http2 (nghttp2) as the encoder', () => {
  const printable = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
  const grpc = (path: string, extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders => ({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-timeout': '2999m',
    'user-agent': 'grpc-node-js/1.12.0',
    ...extra,
  });
  const requests: OutgoingHttpHeaders[] = [
    grpc('/apache.rocketmq.v2.MessagingService/SendMessage', { 'x-mq-client-id': 'client-1' }),
    grpc('/apache.rocketmq.v2.MessagingService/SendMessage', { 'x-mq-client-id': 'client-1' }),
    grpc('/apache.rocketmq.v2.MessagingService/ReceiveMessage', { 'x-mq-client-id': 'client-1' }),
    { ':path': '/printable', 'x-printable': printable, 'X-Upper-Case': 'MiXeD' },
    { ':path': '/printable', 'x-printable': printable, 'x-json': '{"a":[1,2],"b":"c d"}' },
    { ':path': '/long', 'x-long-1': 'a'.repeat(1500), 'x-long-2': printable.repeat(18) },
    { ':path': '/long', 'x-long-3': 'b'.repeat(2000), 'x-long-1': 'a'.repeat(1500) },
    grpc('/apache.rocketmq.v2.MessagingService/SendMessage', { 'x-mq-client-id': 'client-1' }),
    { ':path': '/long', 'x-long-4': 'c'.repeat(1800), 'x-long-5': 'd'.repeat(1100) },
    { ':path': '/multi', 'x-multi': ['one', 'two', 'three'], cookie: ['c=1', 'd=2'] },
    { ':path': '/secret', authorization: 'Bearer abc.def', 'x-empty': '' },
    { ':method': 'PUT', ':path': '/q?x=1&y=%20', accept: '*/*', 'accept-encoding': 'gzip, deflate' },
    grpc('/apache.rocketmq.v2.MessagingService/AckMessage', { 'grpc-timeout': '10S' }),
    grpc('/apache.rocketmq.v2.MessagingService/AckMessage', { 'grpc-timeout': '10S' }),
    { ':path': '/huge', 'x-huge-1': printable.repeat(120), 'x-huge-2': printable.repeat(120) },
    { ':path': '/numbers', 'x-digits': '0123456789'.repeat(30), 'content-length': '0' },
    { ':method': 'DELETE', ':path': '/', 'x-tab': 'a\tb', 'x-latin1': 'caf\u00e9 \u00ff' },
    grpc('/apache.rocketmq.v2.MessagingService/QueryRoute', { 'grpc-encoding': 'identity' }),
    { ':path': '/printable', 'x-printable': printable },
    grpc('/apache.rocketmq.v2.MessagingService/SendMessage', { 'x-mq-client-id': 'client-2' }),
    grpc('/apache.rocketmq.v2.MessagingService/SendMessage', { 'x-mq-client-id': 'client-2' }),
  ];

  /** The fields node sends for a request: pseudo-headers (any order), then the rest lowercased, in order. */
  const expected = (headers: OutgoingHttpHeaders, authority: string) => {
    const pseudo: Record<string, string> = { ':method': 'GET', ':scheme': 'http', ':authority': authority };
    const regular: [string, string][] = [];
    for (const [name, value] of Object.entries(headers)) {
      if (name.startsWith(':')) pseudo[name] = String(value);
      else for (const one of [value].flat()) regular.push([name.toLowerCase(), String(one)]);
    }
    return { pseudo: Object.entries(pseudo).sort(), regular };
  };

  const check = (blocks: Buffer[], authority: string, hpack: HpackDecoder) => {
    expect(blocks).toHaveLength(requests.length);
    blocks.forEach((headerBlock, i) => {
      const { fields, tooLarge } = hpack.decode(headerBlock);
      expect(tooLarge).toBe(false);
      const decoded = pairs(fields);
      const want = expected(requests[i] ?? {}, authority);
      expect(decoded.filter(([name]) => name?.startsWith(':')).sort()).toEqual(want.pseudo);
      expect(decoded.filter(([name]) => !name?.startsWith(':'))).toEqual(want.regular);
    });
  };

  it('decodes every request block of one connection in order, the dynamic table in step', async () => {
    const { blocks, authority, continuations } = await captureRequestBlocks(requests);
    const hpack = decoder();
    check(blocks, authority, hpack);
    // The encoder indexed: a request repeated whole comes back as one-byte indexed fields (all but
    // :path, which nghttp2 never indexes).
    expect(blocks[1]!.length).toBeLessThan(blocks[0]!.length / 2);
    expect(blocks[20]!.length).toBeLessThan(blocks[19]!.length / 2);
    // The 1-2 KB values overflowed the 4096-byte table, so it evicted and stayed within bounds.
    expect(hpack.tableBytes).toBeLessThanOrEqual(4096);
    // The huge request did not fit one 16 KB frame: it came in CONTINUATIONs and was joined.
    expect(blocks[14]?.length).toBeGreaterThan(16_384);
    expect(continuations).toBeGreaterThan(0);
  }, 20_000);

  it('follows the size updates nghttp2 sends after a smaller SETTINGS_HEADER_TABLE_SIZE', async () => {
    // SETTINGS_HEADER_TABLE_SIZE (0x1) = 256.
    const settings = Buffer.from([0x00, 0x01, 0x00, 0x00, 0x01, 0x00]);
    const { blocks, authority } = await captureRequestBlocks(requests, settings);
    const hpack = decoder();
    check(blocks, authority, hpack);
    expect(hpack.tableBytes).toBeLessThanOrEqual(256);
    expect(blocks.some((headerBlock) => ((headerBlock[0] ?? 0) & 0xe0) === 0x20)).toBe(true);
  }, 20_000);
});

describe('HpackDecoder', () => {
  it('decodes the request examples of RFC 7541 Appendix C.3 (raw) and C.4 (Huffman)', () => {
    const examples = [
      [
        '828684410f7777772e6578616d706c652e636f6d',
        '828684be58086e6f2d6361636865',
        '828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565',
      ],
      [
        '828684418cf1e3c2e5f23a6ba0ab90f4ff',
        '828684be5886a8eb10649cbf',
        '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf',
      ],
    ];
    for (const hexes of examples) {
      const hpack = decoder();
      const decoded = hexes.map((hex) => hpack.decode(Buffer.from(hex, 'hex')).fields);
      const first = [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com'];
      expect(decoded[0]).toEqual(first);
      expect(decoded[1]).toEqual([...first, 'cache-control', 'no-cache']);
      expect(decoded[2]).toEqual([
        ...[':method', 'GET', ':scheme', 'https', ':path', '/index.html', ':authority', 'www.example.com'],
        ...['custom-key', 'custom-value'],
      ]);
      expect(hpack.tableBytes).toBe(164);
      expect(hpack.tableEntries).toBe(3);
    }
  });

  it('decodes every representation, names indexed or literal, and accepts a Uint8Array', () => {
    const hpack = decoder();
    const headerBlock = block(
      rep.indexed(2),
      rep.incremental(4, '/a', true),
      rep.incremental('x-new', 'v1'),
      rep.withoutIndexing(31, 'application/grpc'),
      rep.withoutIndexing('x-plain', ''),
      rep.neverIndexed(23, 'secret'),
      rep.neverIndexed('x-never', 'n'),
      rep.indexed(62),
      rep.indexed(63),
    );
    expect(hpack.decode(new Uint8Array(headerBlock)).fields).toEqual([
      ...[':method', 'GET', ':path', '/a', 'x-new', 'v1', 'content-type', 'application/grpc'],
      ...['x-plain', '', 'authorization', 'secret', 'x-never', 'n', 'x-new', 'v1', ':path', '/a'],
    ]);
    expect(hpack.decode(Buffer.alloc(0))).toEqual({ fields: [], tooLarge: false });
  });

  it('evicts the oldest entries to make room, and empties for an entry larger than the table', () => {
    // Each entry 'kN' → 'vN' counts 2 + 2 + 32 = 36 bytes; 100 bytes hold two.
    const hpack = decoder(100);
    hpack.decode(block(rep.incremental('k1', 'v1'), rep.incremental('k2', 'v2')));
    expect(hpack.tableBytes).toBe(72);
    hpack.decode(block(rep.incremental('k3', 'v3')));
    expect(hpack.tableBytes).toBe(72);
    expect(hpack.decode(block(rep.indexed(62), rep.indexed(63))).fields).toEqual(['k3', 'v3', 'k2', 'v2']);
    expect(() => hpack.decode(block(rep.indexed(64)))).toThrow(HpackDecodingError);
    // 1 + 68 + 32 = 101 bytes: larger than the table, which empties; the field itself still decodes.
    const big = 'x'.repeat(68);
    expect(hpack.decode(block(rep.incremental('b', big))).fields).toEqual(['b', big]);
    expect(hpack.tableEntries).toBe(0);
    expect(hpack.tableBytes).toBe(0);
    expect(() => hpack.decode(block(rep.indexed(62)))).toThrow(/past the tables' end/);
    // Exactly the table's size fits, alone.
    hpack.decode(block(rep.incremental('k4', 'v4'), rep.incremental('e', 'x'.repeat(67))));
    expect([hpack.tableEntries, hpack.tableBytes]).toEqual([1, 100]);
  });

  it('empties the table on a size update to 0, and takes entries again once it grows', () => {
    const hpack = decoder(4096);
    hpack.decode(block(rep.incremental('a', '1'), rep.incremental('b', '2')));
    expect(hpack.decode(block(rep.sizeUpdate(0), rep.indexed(2))).fields).toEqual([':method', 'GET']);
    expect(hpack.tableBytes).toBe(0);
    expect(() => hpack.decode(block(rep.indexed(62)))).toThrow(HpackDecodingError);
    // While the limit is 0, an inserted entry is dropped at once.
    hpack.decode(block(rep.incremental('c', '3')));
    expect(hpack.tableEntries).toBe(0);
    // Two updates in a row at the start of a block are allowed; the last one counts.
    hpack.decode(block(rep.sizeUpdate(10), rep.sizeUpdate(4096), rep.incremental('d', '4')));
    expect(hpack.decode(block(rep.indexed(62))).fields).toEqual(['d', '4']);
  });

  it('refuses malformed blocks with HpackDecodingError', () => {
    const refusals: [number[], RegExp][] = [
      [rep.indexed(0), /index 0/],
      [rep.incremental(0, 'v').slice(0, 1), /before a string/],
      [rep.indexed(62), /past the tables' end/],
      [rep.indexed(STATIC_TABLE.length + 1), /past the tables' end/],
      [rep.withoutIndexing(70, 'v'), /past the tables' end/],
      [rep.sizeUpdate(4097), /size update to 4097 above 4096/],
      [[...rep.indexed(2), ...rep.sizeUpdate(0)], /after a header field/],
      [[0xff], /ends inside an integer/],
      [[0xff, 0x80], /ends inside an integer/],
      [[0x00, 0x05, 0x61, 0x62], /past the end/],
      [[0x00, 0x01, 0x61, 0x7f, 0x80, 0x01], /past the end/],
      [[0x00, 0x01, 0x61], /before a string/],
      [[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], /above 2\^31-1/],
      [[0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], /too long/],
      // A Huffman string of one byte 0xff: 8 bits of padding.
      [[0x00, 0x81, 0xff, 0x00], /more than 7 bits/],
    ];
    for (const [bytes, message] of refusals) {
      const decode = () => decoder().decode(Buffer.from(bytes));
      expect(decode).toThrow(HpackDecodingError);
      expect(decode).toThrow(message);
    }
    // 2^31 - 1 itself is an integer (here an index past the table); 5 continuation bytes are allowed.
    expect(() => decoder().decode(Buffer.from([0xff, 0x80, 0xff, 0xff, 0xff, 0x07]))).toThrow(/past/);
    expect(() => decoder().decode(Buffer.from([0xff, 0x80, 0x80, 0x80, 0x80, 0x00]))).toThrow(/past/);
  });

  it('flags a header list over the limit, keeps the fields before it and the table in step', () => {
    // Each field counts name + value + 32: 'x-a' → 'v' is 36 bytes; the limit is 100.
    const hpack = decoder(4096, 100);
    const big = 'b'.repeat(200);
    const decoded = hpack.decode(
      block(
        rep.incremental('x-a', 'v'),
        rep.incremental('x-big', big),
        rep.incremental('x-c', 'w'),
        rep.withoutIndexing('x-d', 'u'),
      ),
    );
    expect(decoded).toEqual({ fields: ['x-a', 'v'], tooLarge: true });
    // Every entry went in, the one over the limit and those after it too.
    expect(hpack.tableBytes).toBe(36 + 237 + 36);
    expect(hpack.decode(block(rep.indexed(62), rep.indexed(64))).fields).toEqual(['x-c', 'w', 'x-a', 'v']);
    expect(hpack.decode(block(rep.indexed(63)))).toEqual({ fields: [], tooLarge: true });
    // Exactly at the limit is not over it: 36 + 64 = 100.
    const at = hpack.decode(block(rep.indexed(64), rep.withoutIndexing('x-e', 'f'.repeat(29))));
    expect(at.tooLarge).toBe(false);
  });

  it('matches a model of the dynamic table over random blocks', () => {
    const name = fc.string({ unit: fc.constantFrom('a', 'b', '-', 'Z'), minLength: 1, maxLength: 12 });
    const op = fc.oneof(
      fc.record({ insert: fc.tuple(name, fc.string({ maxLength: 60 })), huffman: fc.boolean() }),
      fc.record({ refer: fc.nat(40) }),
    );
    const blocks = fc.array(
      fc.record({ resize: fc.option(fc.nat(600)), ops: fc.array(op, { maxLength: 8 }) }),
      {
        maxLength: 30,
      },
    );
    fc.assert(
      fc.property(blocks, (script) => {
        const hpack = decoder(600);
        let model: [string, string][] = [];
        let capacity = 600;
        const fit = () => {
          while (model.reduce((sum, [n, v]) => sum + n.length + v.length + 32, 0) > capacity) model.pop();
        };
        for (const { resize, ops } of script) {
          const parts: number[][] = [];
          const want: string[] = [];
          if (resize !== null) {
            parts.push(rep.sizeUpdate(resize));
            capacity = resize;
            fit();
          }
          for (const step of ops) {
            if ('insert' in step) {
              const [n, v] = step.insert;
              parts.push(rep.incremental(n, v, step.huffman));
              want.push(n, v);
              model.unshift([n, v]);
              if (n.length + v.length + 32 > capacity) model = [];
              fit();
            } else if (step.refer < model.length) {
              parts.push(rep.indexed(62 + step.refer));
              want.push(...(model[step.refer] ?? []));
            }
          }
          expect(hpack.decode(block(...parts)).fields).toEqual(want);
          expect(hpack.tableEntries).toBe(model.length);
        }
      }),
    );
  });
});

describe('encodeHeaderBlock', () => {
  it('indexes a field found whole in the static table: :status 200 is the byte 0x88', () => {
    expect([...encodeHeaderBlock([[':status', '200']])]).toEqual([0x88]);
    expect([...encodeHeaderBlock([[':status', '404']])]).toEqual([0x8d]);
  });

  it('indexes a static name and writes the value raw, without indexing', () => {
    // content-type is static index 31: 4-bit prefix 15, then 16.
    expect([...encodeHeaderBlock([['content-type', 'application/grpc']])]).toEqual([
      0x0f,
      0x10,
      16,
      ...Buffer.from('application/grpc'),
    ]);
    expect([...encodeHeaderBlock([['grpc-status', '0']])]).toEqual([
      0x00,
      11,
      ...Buffer.from('grpc-status'),
      1,
      0x30,
    ]);
  });

  it('round-trips through the decoder, leaving its dynamic table empty', () => {
    const hpack = decoder();
    const fields: [string, string][] = [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-status', '13'],
      ['grpc-message', 'x'.repeat(300)],
      ['date', ''],
      ['x-latin1', 'caf\u00e9'],
    ];
    expect(pairs(hpack.decode(encodeHeaderBlock(fields)).fields)).toEqual(fields);
    expect(hpack.tableEntries).toBe(0);
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.oneof(fc.constantFrom(...STATIC_TABLE.map(([n]) => n)), fc.string({ minLength: 1 })),
            fc.oneof(fc.constantFrom('200', '', 'GET'), fc.string({ unit: 'binary-ascii', maxLength: 200 })),
          ),
          { maxLength: 12 },
        ),
        (random) => {
          expect(pairs(hpack.decode(encodeHeaderBlock(random)).fields)).toEqual(random);
        },
      ),
    );
  });
});
