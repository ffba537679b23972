import type { ViteUserConfig } from 'vitest/config';

/**
 * Resolve workspace packages to their TypeScript source (the `@ricochet/source` export
 * condition), so tests never depend on a stale `dist/`. Vite keeps separate condition lists
 * for the client and SSR (Node) environments; vitest's node environment reads the SSR one.
 */
const conditions = ['@ricochet/source', 'module', 'node', 'import', 'default'];

export const sourceResolution = {
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@ricochet/source'] } },
} satisfies ViteUserConfig;
