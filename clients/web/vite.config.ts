import { defineConfig } from "vite";

// The generated client lives in ../ts/src/gen and imports @bufbuild/protobuf:
// dedupe keeps one copy (this package's) in the bundle.
export default defineConfig({
  base: "/",
  resolve: { dedupe: ["@bufbuild/protobuf", "@connectrpc/connect"] },
  build: { target: "es2022", outDir: "../../server/webapp/dist", assetsDir: "assets", emptyOutDir: true, reportCompressedSize: true },
  server: {
    // `npm run dev` against `parley serve` on :8080.
    proxy: { "/parley.v1.": "http://127.0.0.1:8080", "/uploads": "http://127.0.0.1:8080", "/blobs": "http://127.0.0.1:8080" },
    fs: { allow: [".."] },
  },
});
