import { describe, expect, it } from 'vitest';
import { EndpointRotation } from './endpoint-rotation.js';

describe('EndpointRotation', () => {
  it('starts at the first endpoint and walks the list in order on failures, wrapping around', () => {
    const rotation = new EndpointRotation(['a', 'b', 'c']);
    const tried: string[] = [];
    for (let attempt = 0; attempt < 7; attempt += 1) {
      tried.push(rotation.current);
      rotation.attemptFailed();
    }
    expect(tried).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a']);
  });

  it('stays at the endpoint of a successful attempt, so a dropped session retries it first', () => {
    const rotation = new EndpointRotation(['a', 'b']);
    rotation.attemptFailed();
    // The attempt to b succeeds, which reports nothing; its session drops, and the next attempt
    // reads `current` again: still b. Only its failure moves on.
    expect([rotation.current, rotation.current]).toEqual(['b', 'b']);
    rotation.attemptFailed();
    expect(rotation.current).toBe('a');
  });

  it('keeps trying the one endpoint of a list of one', () => {
    const rotation = new EndpointRotation(['a']);
    rotation.attemptFailed();
    rotation.attemptFailed();
    expect(rotation.current).toBe('a');
  });

  it('keeps its own copy of the list', () => {
    const endpoints = ['a', 'b'];
    const rotation = new EndpointRotation(endpoints);
    endpoints.reverse();
    expect(rotation.current).toBe('a');
  });

  it('refuses an empty list, a broken invariant of its caller', () => {
    expect(() => new EndpointRotation([])).toThrow('at least one endpoint');
  });
});
