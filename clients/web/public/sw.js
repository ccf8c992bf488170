// Parley's service worker: keeps the app's shell (the page and its hashed
// assets) so that the app installs and starts without a network, to its
// offline screen. The API, uploads, downloads and exports are never cached:
// they go to the network or fail.
const CACHE = "parley-shell";
const SHELL = ["/", "/manifest.webmanifest", "/icon.svg", "/icon-192.png"];

/** Caches the shell as the server has it now: the page and what it names. */
async function cacheShell() {
  const cache = await caches.open(CACHE);
  const res = await fetch("/", { cache: "no-cache" });
  if (!res.ok) return;
  const html = await res.clone().text();
  await cache.put("/", res);
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
  await cache.addAll([...SHELL.slice(1), ...assets]);
  // Assets of older builds go.
  const keep = new Set([...SHELL, ...assets].map((p) => new URL(p, location.origin).href));
  for (const req of await cache.keys()) if (!keep.has(req.url) && !new URL(req.url).pathname.startsWith("/assets/")) await cache.delete(req);
}

self.addEventListener("install", (e) => { e.waitUntil(cacheShell()); self.skipWaiting(); });
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== location.origin) return;
  if (req.mode === "navigate") {
    // The network first (a new build shows at once); the kept shell offline.
    e.respondWith(fetch(req).catch(async () => (await caches.match("/")) ?? Response.error()));
    return;
  }
  if (url.pathname.startsWith("/assets/") || SHELL.includes(url.pathname)) {
    // Hashed assets never change: the kept copy, else the network (kept).
    e.respondWith(caches.match(req).then((hit) => hit ?? fetch(req).then((res) => {
      if (res.ok && url.pathname.startsWith("/assets/")) { const copy = res.clone(); caches.open(CACHE).then((c) => c.put(req, copy)); }
      return res;
    })));
  }
});
