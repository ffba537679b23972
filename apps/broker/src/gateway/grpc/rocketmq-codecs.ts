import type { GrpcMethodCodec } from './grpc-server.js';
import {
  type DecodeEnums,
  decodeAckMessageRequest,
  decodeReceiveMessageRequest,
  decodeSendMessageRequest,
} from './rocketmq-decode.js';
import { type EncodeEnums, RocketEncoder } from './rocketmq-encode.js';
import type { RocketCode } from './rocketmq-schema.js';
import {
  enumValuesOf,
  loadRocketSchema,
  messagingServiceDefinition,
  type ServiceCodecs,
} from './rocketmq-schema.js';

const PACKAGE = 'apache.rocketmq.v2.';

/**
 * `MessagingService` as the gateway serves it: proto-loader's definition, with the RPCs every
 * message passes through (`SendMessage`, `ReceiveMessage`, `AckMessage`) (de)serialized by the
 * broker's own codecs (rocketmq-decode.ts, rocketmq-encode.ts) on raw Buffers. Issue 44: the
 * official clients make one call per message sent and per message acked, so what a call costs is
 * what a message costs. The rest keep proto-loader's codec: they are rare (routes, heartbeats,
 * settings) and their shapes many. Enum numbers come from the same schema file the drift test
 * holds to Apache's, so no number is typed twice.
 */
export function rocketServiceDefinition(): ServiceCodecs {
  const definitions = loadRocketSchema();
  const service = messagingServiceDefinition(definitions);
  const byName = (name: string) =>
    new Map(enumValuesOf(definitions, PACKAGE + name).map((v) => [v.name, v.number]));
  const byNumber = <Name>(name: string) =>
    new Map(enumValuesOf(definitions, PACKAGE + name).map((v) => [v.number, v.name as Name]));
  const decodeEnums: DecodeEnums = {
    encoding: byNumber('Encoding'),
    messageType: byNumber('MessageType'),
    filterType: byNumber('FilterType'),
  };
  const encodeEnums: EncodeEnums = {
    code: byName('Code') as ReadonlyMap<RocketCode, number>,
    digestType: byName('DigestType'),
    encoding: byName('Encoding'),
    messageType: byName('MessageType'),
  };
  const encoder = new RocketEncoder(encodeEnums);
  // What the server writes: each answer behind its gRPC prefix, in the one copy encoding makes.
  const framed = new RocketEncoder(encodeEnums, 'grpc');
  const method = (name: string): GrpcMethodCodec => {
    const definition = service[name];
    if (definition === undefined) throw new Error(`MessagingService has no ${name}`);
    return definition;
  };
  return {
    ...service,
    SendMessage: {
      ...method('SendMessage'),
      requestDeserialize: (bytes: Buffer) => decodeSendMessageRequest(bytes, decodeEnums),
      responseSerialize: (answer: Parameters<RocketEncoder['sendMessageResponse']>[0]) =>
        encoder.sendMessageResponse(answer),
      responseFrame: (answer: Parameters<RocketEncoder['sendMessageResponse']>[0]) =>
        framed.sendMessageResponse(answer),
    },
    ReceiveMessage: {
      ...method('ReceiveMessage'),
      requestDeserialize: (bytes: Buffer) => decodeReceiveMessageRequest(bytes, decodeEnums),
      responseSerialize: (frame: Parameters<RocketEncoder['receiveMessageResponse']>[0]) =>
        encoder.receiveMessageResponse(frame),
      responseFrame: (frame: Parameters<RocketEncoder['receiveMessageResponse']>[0]) =>
        framed.receiveMessageResponse(frame),
    },
    AckMessage: {
      ...method('AckMessage'),
      requestDeserialize: (bytes: Buffer) => decodeAckMessageRequest(bytes),
      responseSerialize: (answer: Parameters<RocketEncoder['ackMessageResponse']>[0]) =>
        encoder.ackMessageResponse(answer),
      responseFrame: (answer: Parameters<RocketEncoder['ackMessageResponse']>[0]) =>
        framed.ackMessageResponse(answer),
    },
  };
}
