import type { ViteUserConfig } from 'vitest/config';

/**
 * Resolve workspace packages to their TypeScript source (the `@ricochet/source` export
 * condition), so tests never depend on a stale `dist/`. Vite keeps separate condition lists for
 * the client and the SSR (Node) environment; vitest's node environment reads the SSR one. After
 * ours come Vite's own defaults, so third-party packages resolve exactly as they would without it.
 */
const SOURCE_CONDITION = '@ricochet/source';

export const sourceResolution = {
  resolve: { conditions: [SOURCE_CONDITION, 'module', 'browser', 'development|production'] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, 'module', 'node', 'development|production'] } },
} satisfies ViteUserConfig;
