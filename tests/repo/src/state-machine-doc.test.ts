import {
  BROADCAST_STATES,
  BROADCAST_TERMINAL_STATES,
  BROADCAST_TRANSITIONS,
  initialBroadcastState,
  initialPushState,
  initialSimpleState,
  PUSH_STATES,
  PUSH_TERMINAL_STATES,
  PUSH_TRANSITIONS,
  SIMPLE_STATES,
  SIMPLE_TERMINAL_STATES,
  SIMPLE_TRANSITIONS,
  type TransitionEdge,
} from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { fencedBlocks, readDoc } from './markdown.js';

interface Diagram {
  /** `from --> to: event` for every edge between two states. */
  readonly edges: string[];
  readonly states: string[];
  /** The targets of `[*] --> x` and the sources of `x --> [*]`. */
  readonly initial: string[];
  readonly final: string[];
}

const EDGE = /^(\[\*\]|\w+)\s*-->\s*(\[\*\]|\w+)\s*(?::\s*(\w+))?$/;
const STATE_LABEL = /^state\s+"[^"]*"\s+as\s+(\w+)$/;

/** Reads the subset of mermaid the doc uses; any other line fails, so nothing is skipped unseen. */
function parseDiagram(body: string): Diagram {
  const diagram: Diagram = { edges: [], states: [], initial: [], final: [] };
  const states = new Set<string>();
  for (const raw of body.split('\n')) {
    const line = raw.trim();
    if (line === '' || line === 'stateDiagram-v2') continue;
    const label = STATE_LABEL.exec(line);
    if (label?.[1]) {
      states.add(label[1]);
      continue;
    }
    const edge = EDGE.exec(line);
    const [, from, to, event] = edge ?? [];
    if (from === undefined || to === undefined) throw new Error(`unexpected mermaid line: ${line}`);
    if (from === '[*]') diagram.initial.push(to);
    else if (to === '[*]') diagram.final.push(from);
    else if (event === undefined) throw new Error(`edge without an event: ${line}`);
    else diagram.edges.push(`${from} --> ${to}: ${event}`);
    for (const state of [from, to]) if (state !== '[*]') states.add(state);
  }
  diagram.states.push(...states);
  return diagram;
}

const mermaidBlocks = fencedBlocks(readDoc('docs/protocol/state-machines.md')).filter(
  (block) => block.info === 'mermaid',
);

/** The one mermaid diagram whose nearest heading contains `word`. */
function diagramUnder(word: string): Diagram {
  const matching = mermaidBlocks.filter((block) => block.headings.at(-1)?.includes(word));
  const [block] = matching;
  if (block === undefined || matching.length > 1) {
    throw new Error(`expected one mermaid diagram under a heading with "${word}", found ${matching.length}`);
  }
  return parseDiagram(block.body);
}

const edgeText = ({ from, to, event }: TransitionEdge<string, string>) => `${from} --> ${to}: ${event}`;
const sorted = (values: Iterable<string>) => [...values].sort();

describe.each([
  {
    heading: 'Push',
    transitions: PUSH_TRANSITIONS,
    states: PUSH_STATES,
    initial: initialPushState().state,
    terminal: PUSH_TERMINAL_STATES,
  },
  {
    heading: 'Simple',
    transitions: SIMPLE_TRANSITIONS,
    states: SIMPLE_STATES,
    initial: initialSimpleState().state,
    terminal: SIMPLE_TERMINAL_STATES,
  },
  {
    heading: 'Broadcast',
    transitions: BROADCAST_TRANSITIONS,
    states: BROADCAST_STATES,
    initial: initialBroadcastState().state,
    terminal: BROADCAST_TERMINAL_STATES,
  },
])('the $heading diagram of docs/protocol/state-machines.md', (lifecycle) => {
  const diagram = diagramUnder(lifecycle.heading);

  it('draws exactly the transitions of core', () => {
    expect(sorted(diagram.edges)).toEqual(sorted(lifecycle.transitions.map(edgeText)));
  });

  it('draws exactly the states of core', () => {
    expect(sorted(diagram.states)).toEqual(sorted(lifecycle.states));
  });

  it('starts in the initial state and ends in the terminal states', () => {
    expect(diagram.initial).toEqual([lifecycle.initial]);
    expect(sorted(diagram.final)).toEqual(sorted(lifecycle.terminal));
  });
});
