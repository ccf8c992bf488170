import { defineConfig, type Plugin } from "vite";
import { en } from "./src/messages/en";

// compactMessageIds shortens the catalogue's ids in the built app ("chat.send"
// → "~1k", plural forms keep their suffix: "~2b_one"): the ids name strings
// for the people who write the code, and each appears twice (catalogue and
// call site), so they would cost the first load several KB. Only string
// literals that are exactly a catalogue id (or a plural id's base) change.
function compactMessageIds(): Plugin {
  const plural = /_(zero|one|two|few|many|other)$/;
  const bases = [...new Set(Object.keys(en).map((k) => k.replace(plural, "")))];
  const short = new Map(bases.map((b, i) => [b, "~" + i.toString(36)]));
  const rename = (id: string) => {
    const m = plural.exec(id);
    const s = short.get(m ? id.slice(0, m.index) : id);
    return s === undefined ? id : s + (m ? m[0] : "");
  };
  return {
    name: "compact-message-ids",
    apply: "build",
    transform(code, id) {
      if (!/\/clients\/web\/src\/.*\.ts$/.test(id)) return null;
      return code.replace(/(["'])([A-Za-z]\w*(?:\.\w+)+)\1/g, (lit, q: string, s: string) => {
        const r = rename(s);
        return r === s ? lit : q + r + q;
      });
    },
  };
}

// The generated client lives in ../ts/src/gen and imports @bufbuild/protobuf:
// dedupe keeps one copy (this package's) in the bundle.
export default defineConfig({
  base: "/",
  plugins: [compactMessageIds()],
  resolve: { dedupe: ["@bufbuild/protobuf", "@connectrpc/connect"] },
  build: { target: "es2022", outDir: "../../server/webapp/dist", assetsDir: "assets", emptyOutDir: true, reportCompressedSize: true },
  server: {
    // `npm run dev` against `parley serve` on :8080.
    proxy: { "/parley.v1.": "http://127.0.0.1:8080", "/uploads": "http://127.0.0.1:8080", "/blobs": "http://127.0.0.1:8080" },
    fs: { allow: [".."] },
  },
});
