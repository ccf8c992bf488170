// The generated TypeScript client over gRPC-Web, with the browser's cookies.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { AuthService } from "../../ts/src/gen/parley/v1/auth_pb";
import { ApiKeyService } from "../../ts/src/gen/parley/v1/api_key_pb";
import { ModelService } from "../../ts/src/gen/parley/v1/model_pb";
import { ConversationService } from "../../ts/src/gen/parley/v1/conversation_pb";
import { BillingService, LimitKind } from "../../ts/src/gen/parley/v1/billing_pb";
import { AttachmentService } from "../../ts/src/gen/parley/v1/attachment_pb";
import { ProjectService } from "../../ts/src/gen/parley/v1/project_pb";
import { VectorStoreService } from "../../ts/src/gen/parley/v1/vector_store_pb";
import { FileService } from "../../ts/src/gen/parley/v1/file_pb";
import { MemoryService } from "../../ts/src/gen/parley/v1/memory_pb";
import { LimitExceededSchema, RetryInfoSchema, FieldViolationSchema } from "../../ts/src/gen/parley/v1/errors_pb";
import { Tier } from "../../ts/src/gen/parley/v1/common_pb";
import { num, t, tp } from "./i18n";

export const transport = createGrpcWebTransport({
  baseUrl: location.origin,
  fetch: (input, init) => fetch(input, { ...init, credentials: "include" }),
});

export const auth = createClient(AuthService, transport);
export const keys = createClient(ApiKeyService, transport);
export const models = createClient(ModelService, transport);
export const convs = createClient(ConversationService, transport);
export const billing = createClient(BillingService, transport);
export const attachments = createClient(AttachmentService, transport);
export const projects = createClient(ProjectService, transport);
export const stores = createClient(VectorStoreService, transport);
export const files = createClient(FileService, transport);
export const memories = createClient(MemoryService, transport);

export { Code, ConnectError, LimitKind, Tier, timestampMs, durationMs };

/** "in 3 min", "in 45 s", "in 2 h 5 min". */
export function until(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return tp("time.seconds", s);
  const m = Math.ceil(s / 60);
  if (m < 60) return tp("time.minutes", m);
  return t("time.hoursMinutes", { h: num(Math.floor(m / 60)), m: num(m % 60) });
}

/** What a limit counts, in words ("requests", "input tokens"…). */
export function limitKindName(k: LimitKind): string {
  switch (k) {
    case LimitKind.REQUESTS: return t("limit.kind.requests");
    case LimitKind.INPUT_TOKENS: return t("limit.kind.inputTokens");
    case LimitKind.OUTPUT_TOKENS: return t("limit.kind.outputTokens");
    case LimitKind.REQUEST_RATE: return t("limit.kind.requestRate");
    default: return t("limit.kind.usage");
  }
}

/** A tier's name for people ("Free", "Plus"…). */
export function tierName(tier: Tier): string {
  switch (tier) {
    case Tier.UNSPECIFIED: return t("tier.unspecified");
    case Tier.FREE: return t("tier.free");
    case Tier.PLUS: return t("tier.plus");
    case Tier.PRO: return t("tier.pro");
    case Tier.MAX: return t("tier.max");
    default: return t("tier.unknown");
  }
}

/** A sentence for people from any error, with the time to wait where there is one. */
export function describe(err: unknown): string {
  const e = ConnectError.from(err);
  const retry = e.findDetails(RetryInfoSchema)[0];
  const wait = retry?.retryDelay ? ` ${t("err.tryAgainIn", { time: until(durationMs(retry.retryDelay)) })}` : "";
  switch (e.code) {
    case Code.ResourceExhausted: {
      const lim = e.findDetails(LimitExceededSchema)[0]?.limit;
      if (lim) {
        // The server's retry time says when a send will pass again; resets_at
        // is when the allowance is whole, which can be hours later.
        const reset = wait || (lim.resetsAt ? ` ${t("err.wholeAgainIn", { time: until(timestampMs(lim.resetsAt) - Date.now()) })}` : "");
        return t("err.limitReached", { limit: num(lim.limit), kind: limitKindName(lim.kind), model: lim.model, reset });
      }
      return t("err.limitReachedRaw", { message: e.rawMessage, wait });
    }
    case Code.Unavailable:
      return t("err.overloaded") + (wait || ` ${t("err.tryAgainMoment")}`);
    case Code.Unauthenticated:
      return e.rawMessage || t("err.logIn");
    case Code.InvalidArgument: {
      const f = e.findDetails(FieldViolationSchema)[0];
      return f ? `${f.field}: ${f.description}` : e.rawMessage;
    }
    case Code.Unknown:
      if (isNetworkError(e)) return t("err.unreachable");
      return t("err.wentWrong", { message: e.rawMessage || t("err.network") });
    case Code.Internal:
      return t("err.wentWrong", { message: e.rawMessage || t("err.network") });
    default:
      return e.rawMessage || e.message;
  }
}

/** Whether an error is the network's or an overloaded server's: worth retrying. */
export function isNetworkError(err: unknown): boolean {
  const e = ConnectError.from(err);
  if (e.code === Code.Unavailable) return true;
  return e.code === Code.Unknown && /fetch|network|load failed|protocol error|http 50[234]/i.test(e.rawMessage || e.message);
}

/** The server's retry delay in ms, if it gave one. */
export function retryDelayMs(err: unknown): number | undefined {
  const r = ConnectError.from(err).findDetails(RetryInfoSchema)[0];
  return r?.retryDelay ? durationMs(r.retryDelay) : undefined;
}
