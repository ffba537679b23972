/**
 * The broker's floor plan (DESIGN.md §1, STYLE.md "the floor plan"): the top-level folders and
 * loose files of `apps/broker/src` in layers, top first. A unit imports only units in layers below
 * its own; two units of one layer do not import each other. A folder with an entrance is imported
 * from outside only through its `index.ts`.
 */
export const LAYERS: readonly (readonly string[])[] = [
  // The package's entrance: it names what users may import, from any layer.
  ['index.ts'],
  ['main.ts'],
  // The sub-commands and flags `main` reads.
  ['command-line.ts', 'backup-command.ts'],
  ['app.ts'],
  // What `app` hands Fastify and the store, and the address it answers `listen` with: below it,
  // above the cluster, which never needs them.
  ['store-log.ts', 'http-server-options.ts', 'broker-address.ts', 'log-format.ts'],
  ['cluster'],
  // The front doors, each over the next: a frame session asks the admin API's HTTP guard, which
  // asks auth.
  ['gateway'],
  ['admin'],
  ['auth'],
  // The PEM pair, for the gateway's and the cluster's listeners.
  ['tls.ts'],
  ['engine'],
  ['store'],
  // Every setting, read by every layer.
  ['config.ts'],
];

/** The folders with one entrance, `<folder>/index.ts`. */
export const ENTRANCES: readonly string[] = ['engine', 'cluster'];

/** The unit a file (path from `apps/broker/src`, `/`-separated) belongs to: its top folder, or itself. */
export function unitOf(file: string): string {
  return file.split('/')[0] ?? file;
}

/**
 * Every import of `graph` (file → files it imports, paths from `apps/broker/src`, `/`-separated)
 * that breaks the floor plan, one line each: an import up or across the layers, a deep import into
 * a folder with an entrance, or a file in no layer.
 */
export function floorPlanViolations(
  graph: ReadonlyMap<string, readonly string[]>,
  layers: readonly (readonly string[])[] = LAYERS,
  entrances: readonly string[] = ENTRANCES,
): string[] {
  const layerOf = new Map(layers.flatMap((units, layer) => units.map((unit) => [unit, layer] as const)));
  const violations: string[] = [];
  for (const [file, targets] of graph) {
    const from = unitOf(file);
    const fromLayer = layerOf.get(from);
    if (fromLayer === undefined) {
      violations.push(`${file}: ${from} is in no layer`);
      continue;
    }
    for (const target of targets) {
      const to = unitOf(target);
      if (to === from) continue;
      const toLayer = layerOf.get(to);
      if (toLayer === undefined) violations.push(`${file} → ${target}: ${to} is in no layer`);
      else if (toLayer <= fromLayer) violations.push(`${file} → ${target}: ${to} is not below ${from}`);
      else if (entrances.includes(to) && target !== `${to}/index.ts`) {
        violations.push(`${file} → ${target}: ${to}/ is entered through ${to}/index.ts only`);
      }
    }
  }
  return violations;
}
