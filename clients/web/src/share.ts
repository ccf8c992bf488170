// The read-only page of a shared conversation, /share/{id}: no session
// needed; only what the snapshot holds (title, model, the messages' text and
// attachment names).
import { convs, describe, timestampMs } from "./api";
import { Role } from "../../ts/src/gen/parley/v1/common_pb";
import { h, when } from "./dom";
import { render, upgrade } from "./markdown";
import { t } from "./i18n";

export async function showShared(shareId: string) {
  // The server rendered the page (readable without JavaScript); the app
  // takes it over with its own rendering (code colouring, math) once loaded.
  const ssr = document.getElementById("shared");
  const root = ssr ?? h("main", { id: "shared", class: "shared" }, h("p", { class: "muted" }, t("share.loading")));
  if (!ssr) document.body.append(root);
  try {
    const s = (await convs.getSharedConversation({ shareId })).shared!;
    document.title = `${s.title || t("share.untitled")} · Parley`;
    const msgs = s.messages.map((m) => {
      if (m.role === Role.USER) {
        return h("div", { class: "msg user" }, h("div", { class: "bubble", translate: "no" }, m.text,
          ...m.attachmentFilenames.map((f) => h("span", { class: "chip" }, f))));
      }
      const md = h("div", { class: "md", translate: "no" });
      md.innerHTML = render(m.text);
      upgrade(md);
      return h("div", { class: "msg assistant" }, h("div", { class: "who", translate: m.model ? "no" : undefined }, m.model || t("share.assistant")), md);
    });
    root.removeAttribute("data-server-rendered");
    root.replaceChildren(
      h("header", { class: "shared-head" }, h("h1", { translate: s.title ? "no" : undefined }, s.title || t("share.untitled")),
        h("p", { class: "muted" }, t("share.sharedAt", { when: s.sharedAt ? when(timestampMs(s.sharedAt)) : "" }),
          ...(s.model ? [" · ", h("span", { translate: "no" }, s.model)] : []), ` · ${t("share.readOnly")}`)),
      ...msgs,
      h("footer", { class: "muted" }, h("a", { href: "/", translate: "no" }, "Parley"), ` ${t("share.startOwn")}`));
  } catch (err) {
    if (ssr) return; // the server's page stands, with its own word on a bad link
    document.title = `${t("share.notFound")} · Parley`;
    root.replaceChildren(h("h1", {}, t("share.broken")), h("p", { class: "error", role: "alert" }, describe(err)),
      h("p", {}, h("a", { href: "/" }, t("share.goHome"))));
  }
}
