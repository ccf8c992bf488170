// The allowance rows the Limits dialog and the Usage page show.
import { limitKindName, timestampMs, until } from "./api";
import type { LimitStatus } from "../../ts/src/gen/parley/v1/billing_pb";
import { h } from "./dom";
import { num, t } from "./i18n";

/** One row per limit: use, and when it frees up ("unused" when nothing is used). */
export function limitRows(limits: LimitStatus[]): HTMLElement {
  const now = Date.now();
  return h("table", { class: "limits" }, h("tbody", {}, ...limits.map((l) => {
    const pct = l.limit > 0n ? Number((l.used * 100n) / l.limit) : 0;
    // next_request_at is when the next request passes (the retry time);
    // resets_at is when the allowance is whole again, often much later.
    const next = l.nextRequestAt ? timestampMs(l.nextRequestAt) - now : 0;
    const resets = l.resetsAt ? timestampMs(l.resetsAt) - now : 0;
    const state = l.used === 0n ? t("limits.unused")
      : next > 0 ? t("limits.nextIn", { time: until(next) })
      : resets > 0 ? t("limits.availableWholeIn", { time: until(resets) }) : t("limits.available");
    return h("tr", {},
      h("th", {}, l.model ? h("span", { translate: "no" }, l.model) : "", l.model ? " · " : "", limitKindName(l.kind)),
      h("td", {}, h("meter", { min: 0, max: 100, value: pct, high: 80 }), ` ${num(l.used)} / ${num(l.limit)}`),
      h("td", { class: "muted state" }, state));
  })));
}

