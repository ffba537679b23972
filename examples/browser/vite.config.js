import { defineConfig } from 'vite';

export default defineConfig({
  // From this repository, bundle the clients' TypeScript source: no build of theirs needed first.
  resolve: { conditions: ['@ricochet/source', 'module', 'browser', 'development|production'] },
  build: { target: 'es2022' },
});
