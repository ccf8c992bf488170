// @parley/client for Node: Connect, gRPC-Web (HTTP/1.1) or gRPC (HTTP/2), with
// an in-memory cookie jar for cookie mode.
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { bearer, clientsFor, type ParleyClient, type ParleyOptions } from "./client.js";

export * from "./index.js";

/** Keeps cookies set by the server (Session_id) and sends them back. */
export function cookieJar(): Interceptor {
  const jar = new Map<string, string>();
  const store = (header: string) => {
    const [pair, ...attrs] = header.split(";");
    const eq = pair.indexOf("=");
    if (eq < 0) return;
    const name = pair.slice(0, eq).trim(), value = pair.slice(eq + 1).trim();
    const expired = attrs.some((a) => /^\s*max-age\s*=\s*(0|-\d+)\s*$/i.test(a) || (/^\s*expires\s*=/i.test(a) && Date.parse(a.split("=")[1]) < Date.now()));
    if (expired || value === "") jar.delete(name);
    else jar.set(name, value);
  };
  return (next) => async (req) => {
    if (jar.size) req.header.set("Cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await next(req);
    const h = res.header as Headers & { getSetCookie?: () => string[] };
    for (const c of h.getSetCookie?.() ?? []) store(c);
    return res;
  };
}

/** A Parley client for Node: transport "connect" (default), "grpc-web" or "grpc". */
export function createParleyClient(opts: ParleyOptions): ParleyClient {
  if (typeof opts.transport === "object") return clientsFor(opts.transport);
  const interceptors: Interceptor[] = [...(opts.interceptors ?? [])];
  if (opts.apiKey) interceptors.push(bearer(opts.apiKey));
  if (opts.cookies) interceptors.push(cookieJar());
  let t: Transport;
  switch (opts.transport ?? "connect") {
    case "connect": t = createConnectTransport({ baseUrl: opts.baseUrl, httpVersion: "1.1", interceptors }); break;
    case "grpc-web": t = createGrpcWebTransport({ baseUrl: opts.baseUrl, httpVersion: "1.1", interceptors }); break;
    case "grpc": t = createGrpcTransport({ baseUrl: opts.baseUrl, interceptors }); break;
    default: throw new Error(`unknown transport ${String(opts.transport)}`);
  }
  return clientsFor(t);
}
