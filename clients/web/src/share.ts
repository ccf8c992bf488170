// The read-only page of a shared conversation, /share/{id}: no session
// needed; only what the snapshot holds (title, model, the messages' text and
// attachment names).
import { convs, describe, timestampMs } from "./api";
import { Role } from "../../ts/src/gen/parley/v1/common_pb";
import { h, when } from "./dom";
import { render, upgrade } from "./markdown";

export async function showShared(shareId: string) {
  // The server rendered the page (readable without JavaScript); the app
  // takes it over with its own rendering (code colouring, math) once loaded.
  const ssr = document.getElementById("shared");
  const root = ssr ?? h("main", { id: "shared", class: "shared" }, h("p", { class: "muted" }, "Loading…"));
  if (!ssr) document.body.append(root);
  try {
    const s = (await convs.getSharedConversation({ shareId })).shared!;
    document.title = `${s.title || "Shared conversation"} · Parley`;
    const msgs = s.messages.map((m) => {
      if (m.role === Role.USER) {
        return h("div", { class: "msg user" }, h("div", { class: "bubble" }, m.text,
          ...m.attachmentFilenames.map((f) => h("span", { class: "chip" }, f))));
      }
      const md = h("div", { class: "md" });
      md.innerHTML = render(m.text);
      upgrade(md);
      return h("div", { class: "msg assistant" }, h("div", { class: "who" }, m.model || "assistant"), md);
    });
    root.removeAttribute("data-server-rendered");
    root.replaceChildren(
      h("header", { class: "shared-head" }, h("h1", {}, s.title || "Shared conversation"),
        h("p", { class: "muted" }, `Shared ${s.sharedAt ? when(timestampMs(s.sharedAt)) : ""}${s.model ? ` · ${s.model}` : ""} · read-only`)),
      ...msgs,
      h("footer", { class: "muted" }, h("a", { href: "/" }, "Parley"), " — start your own conversation."));
  } catch (err) {
    if (ssr) return; // the server's page stands, with its own word on a bad link
    document.title = "Not found · Parley";
    root.replaceChildren(h("h1", {}, "This link does not work"), h("p", { class: "error", role: "alert" }, describe(err)),
      h("p", {}, h("a", { href: "/" }, "Go to Parley")));
  }
}
