// Citations of an answer made with file search (a project's chat): its [n]
// markers become small numbered buttons, and a list of the sources follows
// the answer (file name, and the quoted passage in a <details>). The quotes
// are the user's file text: they only ever go in as text nodes.
import type { Citation, Part } from "../../ts/src/gen/parley/v1/common_pb";
import { h } from "./dom";
import { t } from "./i18n";

let seq = 0;

/** Turns the [n] markers naming a citation into links to its source, and appends the list of sources to el (an answer's .msg). */
export function showCitations(el: HTMLElement, cites: Citation[]) {
  el.querySelector(":scope > .sources")?.remove();
  if (!cites.length) return;
  const id = `src-${++seq}`;
  const byNumber = new Map(cites.map((c) => [c.number, c]));
  const md = el.querySelector<HTMLElement>(".md");
  if (md) linkMarkers(md, byNumber, id);
  const list = h("ol", { class: "source-list" }, ...[...cites].sort((a, b) => a.number - b.number).map((c) =>
    h("li", { id: `${id}-${c.number}`, value: c.number, "data-file-id": c.fileId },
      h("details", {},
        h("summary", {}, h("span", { class: "filename", translate: c.filename ? "no" : undefined }, c.filename || t("cite.file")),
          c.score > 0 ? h("span", { class: "muted score", title: t("cite.relevance") }, ` · ${t("cite.percent", { n: Math.round(c.score * 100) })}`) : ""),
        h("blockquote", { class: "quote", translate: "no" }, c.quote)))));
  const box = h("section", { class: "sources", "aria-label": t("cite.sources") }, h("h4", {}, t("cite.sources")), list);
  const actions = el.querySelector(":scope > .actions");
  if (actions) actions.before(box); else el.append(box);
}

/** The citation parts of a stored message. */
export function citationsOf(parts: Part[]): Citation[] {
  return parts.flatMap((p) => (p.kind.case === "citation" ? [p.kind.value] : []));
}

const marker = /\[(\d{1,3})\]/g;

function linkMarkers(root: HTMLElement, byNumber: Map<number, Citation>, id: string) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("code, pre, a, button, .math, .cite") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const todo: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (/\[\d{1,3}\]/.test((n as Text).data)) todo.push(n as Text);
  for (const node of todo) {
    const out: Node[] = [];
    let at = 0;
    for (const m of node.data.matchAll(marker)) {
      const c = byNumber.get(Number(m[1]));
      if (!c) continue;
      if (m.index! > at) out.push(document.createTextNode(node.data.slice(at, m.index)));
      out.push(h("sup", {}, h("a", {
        class: "cite", href: `#${id}-${c.number}`, "data-cite": `${id}-${c.number}`,
        "aria-label": t("cite.source", { n: c.number, name: c.filename || t("cite.file") }), title: c.filename || t("cite.file"),
      }, String(c.number))));
      at = m.index! + m[0].length;
    }
    if (!out.length) continue;
    if (at < node.data.length) out.push(document.createTextNode(node.data.slice(at)));
    node.replaceWith(...out);
  }
}

/** A click on a citation marker opens its source and moves the focus there (the hash is left alone). */
export function onCitationClick(e: MouseEvent): boolean {
  const a = (e.target as HTMLElement).closest<HTMLAnchorElement>("a.cite");
  if (!a) return false;
  e.preventDefault();
  const li = document.getElementById(a.dataset.cite ?? "");
  const d = li?.querySelector("details");
  if (!li || !d) return true;
  d.open = true;
  li.scrollIntoView({ block: "nearest" });
  d.querySelector("summary")?.focus();
  return true;
}
