import { relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { floorPlanViolations, LAYERS } from './floor-plan.js';
import { BROKER_SRC, brokerSourceFiles, importGraph } from './import-graph.js';

/**
 * Issue 31: the broker's folders state its architecture. Every import between top-level folders
 * (and loose files) of `apps/broker/src` runs down the layers of `floor-plan.ts`, and `engine/` and
 * `cluster/` are entered through their `index.ts` only. Source files only, as for the cycle check:
 * a test may drive a module with its neighbours, and test support is imported where it lives.
 */

/** The graph with paths from `apps/broker/src`, `/`-separated. */
function brokerGraph(): Map<string, string[]> {
  const name = (file: string) => relative(BROKER_SRC, file).split(sep).join('/');
  return new Map(
    [...importGraph(brokerSourceFiles())].map(([file, targets]) => [name(file), targets.map(name)]),
  );
}

describe('the broker floor plan', () => {
  const graph = brokerGraph();

  it('reads the broker (a check that finds nothing to read is no check)', () => {
    const units = new Set([...graph.keys()].map((file) => file.split('/')[0]));
    for (const folder of ['cluster', 'gateway', 'admin', 'auth', 'engine', 'store']) {
      expect(units).toContain(folder);
    }
    expect(graph.get('app.ts')?.length).toBeGreaterThan(10);
  });

  it('places every folder and loose file of apps/broker/src in a layer', () => {
    const placed = new Set(LAYERS.flat());
    const units = [...new Set([...graph.keys()].map((file) => file.split('/')[0] ?? file))];
    expect(units.filter((unit) => !placed.has(unit))).toEqual([]);
  });

  it('imports only down the layers, and engine/ and cluster/ through their index.ts', () => {
    expect(floorPlanViolations(graph)).toEqual([]);
  });

  it('fails an import up the layers, across a layer, into a folder past its entrance, or from nowhere', () => {
    const broken = new Map([
      ['store/postgres/cluster-view.ts', ['cluster/membership/queue-assignment.ts']],
      ['gateway/session.ts', ['engine/index.ts', 'cluster/index.ts']],
      ['command-line.ts', ['backup-command.ts']],
      ['admin/topic-routes.ts', ['engine/views/topic-view.ts', 'auth/permissions.ts']],
      ['partitions/routed-queue.ts', ['engine/index.ts']],
    ]);
    expect(floorPlanViolations(broken)).toEqual([
      'store/postgres/cluster-view.ts → cluster/membership/queue-assignment.ts: cluster is not below store',
      'gateway/session.ts → cluster/index.ts: cluster is not below gateway',
      'command-line.ts → backup-command.ts: backup-command.ts is not below command-line.ts',
      'admin/topic-routes.ts → engine/views/topic-view.ts: engine/ is entered through engine/index.ts only',
      'partitions/routed-queue.ts: partitions is in no layer',
    ]);
  });
});
