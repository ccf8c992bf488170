// @parley/client for browsers (and any runtime with fetch): Connect or gRPC-Web.
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { bearer, clientsFor, type ParleyClient, type ParleyOptions } from "./client.js";

export * from "./client.js";
export * from "./gen/parley/v1/common_pb.js";
export * from "./gen/parley/v1/auth_pb.js";
export * from "./gen/parley/v1/api_key_pb.js";
export * from "./gen/parley/v1/model_pb.js";
export * from "./gen/parley/v1/chat_pb.js";
export * from "./gen/parley/v1/conversation_pb.js";
export * from "./gen/parley/v1/attachment_pb.js";
export * from "./gen/parley/v1/file_pb.js";
export * from "./gen/parley/v1/vector_store_pb.js";
export * from "./gen/parley/v1/project_pb.js";
export * from "./gen/parley/v1/memory_pb.js";
export * from "./gen/parley/v1/batch_pb.js";
export * from "./gen/parley/v1/webhook_pb.js";
export * from "./gen/parley/v1/billing_pb.js";
export * from "./gen/parley/v1/errors_pb.js";
export * from "./gen/parley/v1/admin_pb.js";

/** A Parley client over fetch: transport "connect" (default) or "grpc-web". */
export function createParleyClient(opts: ParleyOptions): ParleyClient {
  if (typeof opts.transport === "object") return clientsFor(opts.transport);
  const interceptors: Interceptor[] = [...(opts.interceptors ?? [])];
  if (opts.apiKey) interceptors.push(bearer(opts.apiKey));
  const fetchWith: typeof fetch = opts.cookies ? (input, init) => fetch(input, { ...init, credentials: "include" }) : (input, init) => fetch(input, init);
  const o = { baseUrl: opts.baseUrl, interceptors, fetch: fetchWith };
  let t: Transport;
  switch (opts.transport ?? "connect") {
    case "connect": t = createConnectTransport(o); break;
    case "grpc-web": t = createGrpcWebTransport(o); break;
    default: throw new Error('transport "grpc" needs Node: import { createParleyClient } from "@parley/client/node"');
  }
  return clientsFor(t);
}
