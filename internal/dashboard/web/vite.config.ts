import { defineConfig } from 'vite';

// The page is served by `paddlejob dashboard` from the binary (go:embed of
// dist/): no CDN, no source maps, names by content so they cache for good.
export default defineConfig({
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    // One small bundle: nothing is worth a second round trip on loopback.
    chunkSizeWarningLimit: 200,
    modulePreload: { polyfill: false },
  },
});
