import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { describe, expect, it } from 'vitest';
import { messagingServiceDefinition, ROCKETMQ_PROTO_PATH } from './rocketmq-schema.js';
import { WIRE_FIELDS, type WireKind } from './rocketmq-wire-fields.js';

/**
 * Issue 30: the RocketMQ wire schema is a fact, not code to copy. Every field, enum value and RPC
 * of Ricochet's `rocketmq-v2.proto` must be the one Apache's clients speak: checked against the
 * `.proto` files shipped inside the official Node client package (a devDependency, pinned), so
 * neither side can drift without this test saying where.
 */

const PACKAGE = 'apache.rocketmq.v2.';

interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  readonly type: string;
  readonly typeName: string;
}

interface MessageTypeDescriptor {
  readonly name?: string;
  readonly field?: readonly FieldDescriptor[];
  readonly nestedType?: readonly MessageTypeDescriptor[];
}

interface Descriptor {
  readonly format?: string;
  readonly type?: MessageTypeDescriptor & {
    readonly value?: readonly { readonly name: string; readonly number: number }[];
  };
}

interface MethodDescriptor {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestType: Descriptor & { readonly type: { readonly name: string } };
  readonly responseType: Descriptor & { readonly type: { readonly name: string } };
}

/** Every way `ours` says something `theirs` does not: one line per difference. */
function driftOf(ours: PackageDefinition, theirs: PackageDefinition): string[] {
  const drift: string[] = [];
  for (const [name, definition] of Object.entries(ours)) {
    if (!name.startsWith(PACKAGE)) continue;
    const other = theirs[name];
    if (other === undefined) {
      drift.push(`${name}: not in apache/rocketmq-apis`);
      continue;
    }
    const mine = definition as Descriptor;
    const upstream = other as Descriptor;
    if (mine.format?.endsWith('EnumDescriptorProto')) {
      for (const value of mine.type?.value ?? []) {
        const same = upstream.type?.value?.find((candidate) => candidate.name === value.name);
        if (same?.number !== value.number)
          drift.push(`${name}.${value.name}: ${value.number} vs ${same?.number}`);
      }
    } else if (mine.format?.endsWith('DescriptorProto')) {
      for (const field of mine.type?.field ?? []) {
        const same = upstream.type?.field?.find((candidate) => candidate.name === field.name);
        const shape = (f: FieldDescriptor | undefined) =>
          f === undefined ? 'absent' : `${f.number} ${f.label} ${f.type} ${f.typeName}`;
        if (shape(same) !== shape(field))
          drift.push(`${name}.${field.name}: ${shape(field)} vs ${shape(same)}`);
      }
    } else {
      for (const [method, descriptor] of Object.entries(definition as Record<string, MethodDescriptor>)) {
        const upstreamMethod = (other as Record<string, MethodDescriptor | undefined>)[method];
        const shape = (m: MethodDescriptor | undefined) =>
          m === undefined
            ? 'absent'
            : `${m.path} ${m.requestType.type.name}${m.requestStream ? '*' : ''} -> ${m.responseType.type.name}${m.responseStream ? '*' : ''}`;
        if (shape(upstreamMethod) !== shape(descriptor)) {
          drift.push(`${name}.${method}: ${shape(descriptor)} vs ${shape(upstreamMethod)}`);
        }
      }
    }
  }
  return drift;
}

const TYPE_OF_KIND: Readonly<Record<WireKind, string>> = {
  string: 'TYPE_STRING',
  bytes: 'TYPE_BYTES',
  message: 'TYPE_MESSAGE',
  int32: 'TYPE_INT32',
  int64: 'TYPE_INT64',
  bool: 'TYPE_BOOL',
  enum: 'TYPE_ENUM',
};

/**
 * The fields of message `name` in `theirs`. A map's entry, named as protoc names it
 * (`Message.UserPropertiesEntry`), is the nested type its map field points at.
 */
function fieldsOf(theirs: PackageDefinition, name: string): readonly FieldDescriptor[] | undefined {
  const direct = (theirs[name] as Descriptor | undefined)?.type?.field;
  if (direct !== undefined) return direct;
  const parentName = name.slice(0, name.lastIndexOf('.'));
  const entryName = name.slice(parentName.length + 1);
  const parent = (theirs[parentName] as Descriptor | undefined)?.type;
  const camel = (field: string) =>
    field.replace(/(^|_)(\w)/g, (_, __, letter: string) => letter.toUpperCase());
  const mapField = parent?.field?.find((field) => `${camel(field.name)}Entry` === entryName);
  return parent?.nestedType?.find((nested) => nested.name === mapField?.typeName)?.field;
}

/** Every field of `table` whose number or type `theirs` does not share: one line per difference. */
function codecDriftOf(
  table: Readonly<Record<string, Readonly<Record<string, readonly [number, WireKind]>>>>,
  theirs: PackageDefinition,
): string[] {
  const drift: string[] = [];
  for (const [message, fields] of Object.entries(table)) {
    const upstreamFields = fieldsOf(theirs, message);
    for (const [name, [number, kind]] of Object.entries(fields)) {
      const same = upstreamFields?.find((field) => field.name === name);
      const ours = `${number} ${TYPE_OF_KIND[kind]}`;
      const upstreamShape = same === undefined ? 'absent' : `${same.number} ${same.type}`;
      if (upstreamShape !== ours) drift.push(`${message}.${name}: ${ours} vs ${upstreamShape}`);
    }
  }
  return drift;
}

const require = createRequire(import.meta.url);
const upstreamProtoDir = join(dirname(require.resolve('rocketmq-client-nodejs/package.json')), 'proto');
/** Field names as the .proto files write them, so a difference reads as the files do. */
const AS_WRITTEN = { keepCase: true } as const;
const upstream = loadSync(['apache/rocketmq/v2/service.proto', 'apache/rocketmq/v2/definition.proto'], {
  ...AS_WRITTEN,
  includeDirs: [upstreamProtoDir],
});

describe('the RocketMQ wire schema', () => {
  it('matches the .proto files of the official Node client, field by field', () => {
    const ours = loadSync(ROCKETMQ_PROTO_PATH, AS_WRITTEN);
    const compared = Object.keys(ours).filter((name) => name.startsWith(PACKAGE));
    // A check that compares nothing is no check: the service and its messages are all there.
    expect(compared.length).toBeGreaterThan(60);
    expect(driftOf(ours, upstream)).toEqual([]);
  });

  it('serves every RPC of MessagingService', () => {
    const upstreamService = upstream[`${PACKAGE}MessagingService`] as Record<string, unknown>;
    expect(Object.keys(messagingServiceDefinition()).sort()).toEqual(Object.keys(upstreamService).sort());
  });

  it("holds every field the gateway's own codecs read or write to the official client's .proto", () => {
    const checked = Object.values(WIRE_FIELDS).reduce((sum, fields) => sum + Object.keys(fields).length, 0);
    expect(checked).toBeGreaterThan(50);
    expect(codecDriftOf(WIRE_FIELDS, upstream)).toEqual([]);
    // And the check can fail: a number, a type and a name that are not the clients'.
    expect(
      codecDriftOf(
        {
          'apache.rocketmq.v2.SystemProperties': {
            delivery_attempt: [61, 'int32'],
            queue_offset: [14, 'int32'],
          },
          'apache.rocketmq.v2.Message.UserPropertiesEntry': { key: [1, 'string'], values: [2, 'string'] },
        },
        upstream,
      ),
    ).toEqual([
      'apache.rocketmq.v2.SystemProperties.delivery_attempt: 61 TYPE_INT32 vs 16 TYPE_INT32',
      'apache.rocketmq.v2.SystemProperties.queue_offset: 14 TYPE_INT32 vs 14 TYPE_INT64',
      'apache.rocketmq.v2.Message.UserPropertiesEntry.values: 2 TYPE_STRING vs absent',
    ]);
  });

  it('finds a field whose number drifted (a check that can fail)', () => {
    const directory = mkdtempSync(join(tmpdir(), 'ricochet-proto-'));
    try {
      const drifted = join(directory, 'drifted.proto');
      const text = readFileSync(ROCKETMQ_PROTO_PATH, 'utf8').replace(
        'optional int32 delivery_attempt = 16;',
        'optional int32 delivery_attempt = 61;',
      );
      writeFileSync(drifted, text);
      expect(driftOf(loadSync(drifted, AS_WRITTEN), upstream)).toEqual([
        `${PACKAGE}SystemProperties.delivery_attempt: 61 LABEL_OPTIONAL TYPE_INT32  vs 16 LABEL_OPTIONAL TYPE_INT32 `,
      ]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
