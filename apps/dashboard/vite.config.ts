import { defineConfig } from 'vite';

/**
 * The broker serves this build at `/ui/`, so every URL in it starts there. `@ricochet/core` is
 * read from its TypeScript source (the workspace's `@ricochet/source` condition), so the bundle
 * builds without core's `dist/`; only the retry functions it uses end up in the bundle.
 */
export default defineConfig({
  base: '/ui/',
  resolve: { conditions: ['@ricochet/source', 'module', 'browser', 'development|production'] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One small script and one stylesheet; nothing is inlined as a data URL.
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
});
