import { describe, expect, it } from 'vitest';
import { tagHandle } from '../../cluster/routing/queue-addressing.js';
import { QUEUE_COUNT } from '../../store/postgres/queue-schema.js';
import {
  decodeBroadcastReceiptHandle,
  decodeReceiptHandle,
  encodeBroadcastReceiptHandle,
  encodeReceiptHandle,
  groupAndTopicOfHandle,
  isBroadcastReceiptHandle,
  MAX_BROADCAST_CLIENT_ID_BYTES,
} from './receipt-handle.js';

describe('receipt handles', () => {
  it('round-trip, DLQ topics included', () => {
    for (const handle of [
      { group: 'billing', topic: 'orders.v2', offset: 0, lease: 1 },
      { group: 'ops', topic: '%DLQ%billing', offset: 123_456_789, lease: 42 },
    ]) {
      expect(decodeReceiptHandle(encodeReceiptHandle(handle, handle.lease))).toEqual(handle);
    }
  });

  it.each([
    '',
    'x',
    '1~g~t~0',
    '2~g~t~0~1',
    '1~g~t~-1~1',
    '1~g~t~0~0',
    '1~g~t~01~1',
    '1~g h~t~0~1',
    '1~g~%X%t~0~1',
    '1~g~t~0~1.5',
    '1~g~t~0~1~2',
    '1~~t~0~1',
    '1~g~t~~1',
    '1~g~t~0~',
    '1~g~t~99999999999999999~1',
    '1~g~t~9007199254740993~1',
  ])('rejects %j', (text) => {
    expect(decodeReceiptHandle(text)).toBeUndefined();
  });
});

describe('broadcast receipt handles (B1)', () => {
  it('round-trip any clientId, separators and non-ASCII text included, and never pass as a plain handle', () => {
    for (const clientId of ['worker-1', 'host~7/pid 42', 'zürich-αβ']) {
      const handle = { group: 'audit', clientId, topic: 'orders', offset: 7, lease: 3 };
      const text = encodeBroadcastReceiptHandle(handle);
      expect(isBroadcastReceiptHandle(text)).toBe(true);
      expect(decodeBroadcastReceiptHandle(text)).toEqual(handle);
      expect(decodeReceiptHandle(text)).toBeUndefined();
    }
  });

  it('stays within the protocol limit of 512 characters for the longest names an instance may have, tagged with the last queue', () => {
    for (const clientId of [
      'é'.repeat(Math.floor(MAX_BROADCAST_CLIENT_ID_BYTES / 2)),
      'a'.repeat(MAX_BROADCAST_CLIENT_ID_BYTES),
      '😀'.repeat(Math.floor(MAX_BROADCAST_CLIENT_ID_BYTES / 4)),
    ]) {
      const handle = {
        group: 'g'.repeat(120),
        clientId,
        topic: `%DLQ%${'t'.repeat(120)}`,
        offset: Number.MAX_SAFE_INTEGER,
        lease: Number.MAX_SAFE_INTEGER,
      };
      expect(tagHandle(encodeBroadcastReceiptHandle(handle), QUEUE_COUNT - 1).length).toBeLessThanOrEqual(
        512,
      );
    }
  });

  it.each([
    'B~audit~~orders~7~3',
    'B~audit~d29ya2VyLTE~orders~7',
    'B~audit~!!~orders~7~3',
    '1~audit~orders~7~3',
  ])('refuses %s', (text) => {
    expect(decodeBroadcastReceiptHandle(text)).toBeUndefined();
  });
});

describe('groupAndTopicOfHandle', () => {
  it('reads the group and topic of both kinds of handle as the decoders do', () => {
    const plain = { group: 'billing', topic: '%DLQ%billing', offset: 12, lease: 3 };
    const broadcast = { group: 'audit', topic: 'orders', offset: 7, lease: 1, clientId: 'audit~1 é' };
    expect(groupAndTopicOfHandle(encodeReceiptHandle(plain, plain.lease))).toEqual({
      group: 'billing',
      topic: '%DLQ%billing',
    });
    expect(groupAndTopicOfHandle(encodeBroadcastReceiptHandle(broadcast))).toEqual({
      group: 'audit',
      topic: 'orders',
    });
  });

  it.each(['', 'x', '2~g~t~0~1', '1~g', '1~g~t', 'B~g~Yw', 'B~g~Yw~t'])('finds no names in %j', (text) => {
    expect(groupAndTopicOfHandle(text)).toBeUndefined();
  });
});
