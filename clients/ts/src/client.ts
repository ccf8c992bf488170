// The SDK core, shared by the browser (index.ts) and Node (node.ts) entries.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { AuthService } from "./gen/parley/v1/auth_pb.js";
import { ApiKeyService } from "./gen/parley/v1/api_key_pb.js";
import { ModelService } from "./gen/parley/v1/model_pb.js";
import { ChatService, type CompleteStreamRequest } from "./gen/parley/v1/chat_pb.js";
import { ConversationService } from "./gen/parley/v1/conversation_pb.js";
import { AttachmentService } from "./gen/parley/v1/attachment_pb.js";
import { FileService } from "./gen/parley/v1/file_pb.js";
import { VectorStoreService } from "./gen/parley/v1/vector_store_pb.js";
import { ProjectService } from "./gen/parley/v1/project_pb.js";
import { MemoryService } from "./gen/parley/v1/memory_pb.js";
import { BatchService } from "./gen/parley/v1/batch_pb.js";
import { WebhookService } from "./gen/parley/v1/webhook_pb.js";
import { BillingService, type LimitStatus } from "./gen/parley/v1/billing_pb.js";
import { AdminService } from "./gen/parley/v1/admin_pb.js";
import { FieldViolationSchema, InsufficientBalanceSchema, LimitExceededSchema, RetryInfoSchema, type FieldViolation, type InsufficientBalance } from "./gen/parley/v1/errors_pb.js";
import { Role, ToolCallSchema, type GenerationEvent, type GenerationFinished, type Message, type ToolCall } from "./gen/parley/v1/common_pb.js";
import { create, type MessageInitShape } from "@bufbuild/protobuf";

export type TransportKind = "connect" | "grpc-web" | "grpc";

export interface ParleyOptions {
  /** The gateway, e.g. "http://127.0.0.1:8080". */
  baseUrl: string;
  /** An API key ("pk_…"), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Cookie mode: keep the Session_id cookie that signUp/login set (browser: credentials "include"; Node: an in-memory jar). */
  cookies?: boolean;
  /** The wire protocol; "connect" by default. "grpc" needs Node (import "@parley/client/node"). */
  transport?: TransportKind | Transport;
  /** Extra interceptors. */
  interceptors?: Interceptor[];
}

/** An error from Parley: the Connect code, and the details Parley attaches. */
const brand = Symbol.for("@parley/client.ParleyError");

export class ParleyError extends ConnectError {
  override name = "ParleyError";
  // ConnectError's instanceof matches any error of its shape; this one is exact.
  static override [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[brand] === true;
  }
  readonly [brand] = true;
  /** How long to wait before retrying (RetryInfo detail, else the Retry-After header), in ms. */
  readonly retryAfterMs?: number;
  /** The tier limit that was hit (resource_exhausted from the web channel). */
  readonly limit?: LimitStatus;
  /** The balance shortfall (resource_exhausted from the API channel). */
  readonly insufficientBalance?: InsufficientBalance;
  /** The bad fields (invalid_argument). */
  readonly fieldViolations: FieldViolation[];

  constructor(e: ConnectError) {
    super(e.rawMessage, e.code, e.metadata, undefined, e);
    Object.setPrototypeOf(this, new.target.prototype);
    this.stack = e.stack?.replace(/^ConnectError/, "ParleyError");
    this.details = e.details;
    const info = e.findDetails(RetryInfoSchema)[0];
    const header = e.metadata.get("retry-after");
    if (info?.retryDelay) this.retryAfterMs = durationMs(info.retryDelay);
    else if (header && /^\d+$/.test(header)) this.retryAfterMs = Number(header) * 1000;
    this.limit = e.findDetails(LimitExceededSchema)[0]?.limit;
    this.insufficientBalance = e.findDetails(InsufficientBalanceSchema)[0];
    this.fieldViolations = e.findDetails(FieldViolationSchema);
  }

  /** The code's name: "resource_exhausted", "unavailable", … */
  get codeName(): string {
    return Code[this.code].replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());
  }
  /** When the limit that was hit is whole again, in ms since the epoch. */
  get resetsAtMs(): number | undefined {
    return this.limit?.resetsAt ? timestampMs(this.limit.resetsAt) : undefined;
  }
}

export function toParleyError(err: unknown): ParleyError {
  return err instanceof ParleyError ? err : new ParleyError(ConnectError.from(err));
}

async function* rethrowing<T>(it: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* it;
  } catch (e) {
    throw toParleyError(e);
  }
}

/** Wraps a generated client so its calls throw ParleyError. */
function typed<T extends object>(client: T): T {
  return new Proxy(client, {
    get(target, prop, recv) {
      const fn = Reflect.get(target, prop, recv);
      if (typeof fn !== "function") return fn;
      return (...args: unknown[]) => {
        const r = fn.apply(target, args);
        if (r && typeof r.then === "function") return r.catch((e: unknown) => { throw toParleyError(e); });
        if (r && typeof r[Symbol.asyncIterator] === "function") return rethrowing(r);
        return r;
      };
    },
  });
}

export interface ParleyClient {
  auth: Client<typeof AuthService>;
  apiKeys: Client<typeof ApiKeyService>;
  models: Client<typeof ModelService>;
  chat: Client<typeof ChatService>;
  conversations: Client<typeof ConversationService>;
  attachments: Client<typeof AttachmentService>;
  files: Client<typeof FileService>;
  vectorStores: Client<typeof VectorStoreService>;
  projects: Client<typeof ProjectService>;
  memories: Client<typeof MemoryService>;
  batches: Client<typeof BatchService>;
  webhooks: Client<typeof WebhookService>;
  billing: Client<typeof BillingService>;
  admin: Client<typeof AdminService>;
}

export function clientsFor(transport: Transport): ParleyClient {
  return {
    auth: typed(createClient(AuthService, transport)),
    apiKeys: typed(createClient(ApiKeyService, transport)),
    models: typed(createClient(ModelService, transport)),
    chat: typed(createClient(ChatService, transport)),
    conversations: typed(createClient(ConversationService, transport)),
    attachments: typed(createClient(AttachmentService, transport)),
    files: typed(createClient(FileService, transport)),
    vectorStores: typed(createClient(VectorStoreService, transport)),
    projects: typed(createClient(ProjectService, transport)),
    memories: typed(createClient(MemoryService, transport)),
    batches: typed(createClient(BatchService, transport)),
    webhooks: typed(createClient(WebhookService, transport)),
    billing: typed(createClient(BillingService, transport)),
    admin: typed(createClient(AdminService, transport)),
  };
}

export function bearer(key: string): Interceptor {
  return (next) => (req) => {
    req.header.set("Authorization", `Bearer ${key}`);
    return next(req);
  };
}

/** A user message of one text part. */
export function userText(text: string): MessageInitShape<typeof import("./gen/parley/v1/common_pb.js").MessageSchema> {
  return { role: Role.USER, parts: [{ kind: { case: "text", value: text } }] };
}

/** A CompleteStreamRequest with one user message. */
export function prompt(model: string, text: string): MessageInitShape<typeof import("./gen/parley/v1/chat_pb.js").CompleteStreamRequestSchema> {
  return { model, messages: [userText(text)] };
}

/** A tool message: the result (often JSON text) of the tool call with id `toolCallId`. */
export function toolResult(toolCallId: string, content: string): MessageInitShape<typeof import("./gen/parley/v1/common_pb.js").MessageSchema> {
  return { role: Role.TOOL, parts: [{ kind: { case: "toolResult", value: { toolCallId, content } } }] };
}

/** The text of a stream's answer (choice 0), piece by piece. */
export async function* deltas(stream: AsyncIterable<{ event?: GenerationEvent }>): AsyncGenerator<string> {
  for await (const { event } of stream) if (event?.kind.case === "delta" && event.kind.value.choice === 0 && event.kind.value.text) yield event.kind.value.text;
}

/**
 * Reads a stream to its end: the answer's text and tool calls (choice 0; each call
 * assembled from its pieces by index), the finished event, and the last seq.
 */
export async function collect(stream: AsyncIterable<{ event?: GenerationEvent }>): Promise<{ text: string; toolCalls: ToolCall[]; finished?: GenerationFinished; lastSeq: bigint }> {
  let text = "", finished: GenerationFinished | undefined, lastSeq = 0n;
  const calls: ToolCall[] = [];
  for await (const { event } of stream) {
    if (!event) continue;
    lastSeq = event.seq;
    if (event.kind.case === "delta" && event.kind.value.choice === 0) {
      text += event.kind.value.text;
      for (const d of event.kind.value.toolCalls) {
        const c = (calls[d.index] ??= create(ToolCallSchema));
        if (d.id) c.id = d.id;
        if (d.name) c.name = d.name;
        c.arguments += d.arguments;
      }
    }
    if (event.kind.case === "finished") finished = event.kind.value;
  }
  return { text, toolCalls: calls.filter(Boolean), finished, lastSeq };
}

export type { Message, CompleteStreamRequest };
export { Code, ConnectError };
