import { describe, expect, it } from 'vitest';
import { parseBrokerEndpoint } from './broker-endpoint.js';
import { CliError } from './cli-error.js';

describe('parseBrokerEndpoint', () => {
  it.each([
    ['http://127.0.0.1:7720', 'http://127.0.0.1:7720', 'ws://127.0.0.1:7720'],
    ['ws://127.0.0.1:7720/', 'http://127.0.0.1:7720', 'ws://127.0.0.1:7720'],
    ['https://broker.example:443', 'https://broker.example', 'wss://broker.example'],
    [
      'wss://broker.example:8443/ricochet/',
      'https://broker.example:8443/ricochet',
      'wss://broker.example:8443/ricochet',
    ],
  ])('maps %s to one admin URL and one WebSocket URL', (given, adminUrl, webSocketUrl) => {
    expect(parseBrokerEndpoint(given)).toEqual({ given, adminUrl, webSocketUrl });
  });

  it.each(['127.0.0.1:7720', 'tcp://127.0.0.1:7721', 'http://127.0.0.1:7720/?x=1', 'not a url'])(
    'refuses %s as a usage error',
    (given) => {
      expect(() => parseBrokerEndpoint(given)).toThrow(CliError);
      try {
        parseBrokerEndpoint(given);
      } catch (error) {
        expect((error as CliError).exit).toBe('USAGE');
      }
    },
  );
});
