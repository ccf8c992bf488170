// Memory: short facts the user asked Parley to remember (MemoryService). The
// settings page's Memory section turns it on or off and lists, adds, edits
// and deletes memories; a message's Remember button saves (an edited cut of)
// its text; an answer whose generation used memories (GenerationStarted.
// memory_ids) says "Used 2 memories" and, opened, lists them. Memory text
// is the user's: it only ever goes in as text nodes.
import { Code, ConnectError, describe, memories, timestampMs } from "./api";
import type { Memory } from "../../ts/src/gen/parley/v1/memory_pb";
import { FieldViolationSchema } from "../../ts/src/gen/parley/v1/errors_pb";
import { h } from "./dom";
import { num, t, tp } from "./i18n";

/** The most characters a memory has (the server's limit, in code points after trimming). */
export const maxMemoryChars = 1000;
const chars = (t: string) => Array.from(t).length;

/** Why text cannot be a memory, in words for people; "" when it can. */
export function memoryTextProblem(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return t("memory.empty");
  const n = chars(trimmed);
  if (n > maxMemoryChars) return t("memory.tooLong", { max: num(maxMemoryChars), n: num(n), over: num(n - maxMemoryChars) });
  return "";
}

/** A refused memory call, said for people (the server's words only where nothing better fits). */
export function memoryError(err: unknown): string {
  const e = ConnectError.from(err);
  switch (e.code) {
    case Code.InvalidArgument: {
      const f = e.findDetails(FieldViolationSchema)[0];
      if (f?.field === "text") {
        if (/required/.test(f.description)) return t("memory.empty");
        if (/over the limit/.test(f.description)) return t("memory.overLimit", { max: num(maxMemoryChars) });
        return t("memory.invalid");
      }
      break;
    }
    case Code.FailedPrecondition:
      return /not available/.test(e.rawMessage) ? t("memory.unavailable")
        : t("memory.full", { max: num(200) });
    case Code.NotFound:
      return t("memory.gone");
  }
  return describe(err);
}

// ---------- the cache of the user's memories (id → text) ----------
const known = new Map<string, string>();
let listing: Promise<Memory[]> | undefined;

/** Every memory of the user, most recently changed first (they are at most 200). */
async function listAll(): Promise<Memory[]> {
  listing ??= (async () => {
    const all: Memory[] = [];
    let pageToken = "";
    do {
      const r = await memories.listMemories({ pageSize: 100, pageToken });
      all.push(...r.memories);
      pageToken = r.nextPageToken;
    } while (pageToken);
    known.clear();
    for (const m of all) known.set(m.memoryId, m.text);
    return all;
  })().finally(() => { listing = undefined; });
  return listing;
}

/** The texts of memory ids, from the cache, listing again once if any is unknown (undefined: since deleted). */
async function textsOf(ids: string[]): Promise<(string | undefined)[]> {
  if (ids.some((id) => !known.has(id))) await listAll();
  return ids.map((id) => known.get(id));
}

// ---------- "Used 2 memories" on an answer ----------
/** Puts the note naming the memories an answer used under its model name (once; none when ids is empty). */
export function showUsedMemories(answer: HTMLElement, ids: string[]) {
  answer.querySelector(":scope > .memories-used")?.remove();
  if (!ids.length) return;
  const list = h("ul", { class: "memories-used-list" }, h("li", { class: "muted" }, t("memory.loading")));
  const box = h("details", { class: "memories-used" },
    h("summary", {}, h("span", { class: "icon", "aria-hidden": "true" }, "✦ "), tp("memory.used", ids.length)),
    list, h("a", { href: "#/settings", class: "manage" }, t("memory.manage"))) as HTMLDetailsElement;
  let filled = false;
  box.addEventListener("toggle", async () => {
    if (!box.open || filled) return;
    filled = true;
    try {
      const texts = await textsOf(ids);
      list.replaceChildren(...texts.map((text) => text === undefined
        ? h("li", { class: "muted" }, t("memory.deletedSince"))
        : h("li", { translate: "no" }, text)));
    } catch (err) {
      filled = false;
      list.replaceChildren(h("li", { class: "error" }, memoryError(err)));
    }
  });
  const who = answer.querySelector(":scope > .who");
  if (who) who.after(box); else answer.prepend(box);
}

// ---------- Remember (a message's button) ----------
let toastTimer = 0;
/** A short confirmation at the bottom of the window, read out by screen readers. */
function toast(...kids: (Node | string)[]) {
  let el = document.getElementById("toast");
  if (!el) {
    const box = el = h("div", { id: "toast", class: "toast", role: "status", "aria-live": "polite" });
    document.body.append(box);
    window.addEventListener("hashchange", () => { box.hidden = true; box.textContent = ""; }); // it belongs to the page that showed it
  }
  el.replaceChildren(...kids);
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = window.setTimeout(() => { el!.hidden = true; el!.textContent = ""; }, 5000);
}

/** A live "n / 1000" under a memory field, marking it over the limit. */
function counter(field: HTMLTextAreaElement, id: string): HTMLElement {
  const c = h("span", { class: "muted counter", id });
  const update = () => {
    const n = chars(field.value.trim());
    c.textContent = `${num(n)} / ${num(maxMemoryChars)}`;
    c.classList.toggle("over", n > maxMemoryChars);
  };
  field.addEventListener("input", update);
  update();
  return c;
}

/** Shows err under field (or clears it), marking the field invalid. */
function fieldError(field: HTMLElement, line: HTMLElement, msg: string) {
  line.textContent = msg;
  if (msg) field.setAttribute("aria-invalid", "true"); else field.removeAttribute("aria-invalid");
}

let dialog: HTMLDialogElement | undefined;
/** The Remember dialog: text (cut to 1000 characters, editable) saved as a memory; focus goes back to from. */
export function rememberDialog(text: string, from?: HTMLElement) {
  if (!dialog) {
    dialog = h("dialog", { id: "remember-dialog", "aria-labelledby": "remember-title" }) as HTMLDialogElement;
    document.body.append(dialog);
  }
  const dlg = dialog;
  const ta = h("textarea", { id: "remember-text", rows: 6, "aria-describedby": "remember-hint remember-count" }) as HTMLTextAreaElement;
  ta.value = Array.from(text.trim()).slice(0, maxMemoryChars).join("");
  const err = h("p", { class: "error", id: "remember-error", role: "alert" });
  const save = h("button", { id: "remember-save", class: "primary" }, t("memory.saveTo")) as HTMLButtonElement;
  const form = h("form", { method: "dialog", class: "project-form memory-form" },
    h("h2", { id: "remember-title" }, t("memory.remember.title")),
    h("p", { class: "muted", id: "remember-hint" }, t("memory.remember.hint")),
    h("label", { for: "remember-text" }, t("memory.remember.label")), ta,
    h("div", { class: "row" }, counter(ta, "remember-count")), err,
    h("div", { class: "row" }, save, h("button", { value: "cancel", formnovalidate: true, id: "remember-cancel" }, t("memory.cancel")))) as HTMLFormElement;
  ta.addEventListener("input", () => { if (err.textContent) fieldError(ta, err, ""); });
  form.onsubmit = async (e) => {
    if ((e as SubmitEvent).submitter?.id !== "remember-save") return; // Cancel closes
    e.preventDefault();
    const problem = memoryTextProblem(ta.value);
    if (problem) { fieldError(ta, err, problem); ta.focus(); return; }
    save.disabled = true;
    try {
      const m = (await memories.createMemory({ text: ta.value })).memory!;
      known.set(m.memoryId, m.text);
      dlg.close();
      const on = await memories.getMemorySettings({}).then((r) => r.settings?.enabled ?? true, () => true);
      toast(on ? t("memory.savedTo") : `${t("memory.savedToOff")} `,
        h("a", { href: "#/settings" }, t("memory.manage")));
    } catch (e2) { fieldError(ta, err, memoryError(e2)); ta.focus(); } finally { save.disabled = false; }
  };
  dlg.replaceChildren(form);
  dlg.onclose = () => { if (from?.isConnected) from.focus(); };
  dlg.showModal();
  ta.focus();
  ta.setSelectionRange(ta.value.length, ta.value.length);
}

// ---------- the settings page's Memory section ----------
/** The Memory section: the on/off switch, Add memory, and the saved memories with Edit and Delete. */
export function memorySection(): HTMLElement {
  const err = h("p", { class: "error", id: "memory-error", role: "alert" });
  const status = h("p", { class: "muted", id: "memory-state", role: "status" });
  const sw = h("input", { type: "checkbox", role: "switch", id: "memory-enabled", disabled: true, "aria-describedby": "memory-state" }) as HTMLInputElement;
  const stateText = () => {
    status.textContent = sw.checked
      ? t("memory.state.on", { n: num(5) })
      : t("memory.state.off");
  };
  sw.onchange = async () => {
    const want = sw.checked;
    sw.disabled = true;
    fieldError(sw, err, "");
    try {
      const r = await memories.updateMemorySettings({ settings: { enabled: want } });
      sw.checked = r.settings?.enabled ?? want;
    } catch (e) { sw.checked = !want; err.textContent = memoryError(e); } finally { sw.disabled = false; stateText(); }
  };

  const add = h("textarea", { id: "memory-new", rows: 2, placeholder: t("memory.add.placeholder"), "aria-describedby": "memory-new-count memory-add-error" }) as HTMLTextAreaElement;
  const addErr = h("p", { class: "error", id: "memory-add-error", role: "alert" });
  const addBtn = h("button", { class: "primary", id: "memory-add" }, t("memory.add")) as HTMLButtonElement;
  const addForm = h("form", { id: "memory-add-form", class: "project-form memory-form" },
    h("label", { for: "memory-new" }, t("memory.add")), add,
    h("div", { class: "row" }, addBtn, counter(add, "memory-new-count")), addErr) as HTMLFormElement;
  add.addEventListener("input", () => { if (addErr.textContent) fieldError(add, addErr, ""); });
  add.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); addForm.requestSubmit(); }
  });

  const count = h("span", { class: "muted", id: "memory-count" });
  const list = h("ul", { id: "memory-list", class: "memory-list", "aria-labelledby": "memory-list-h" }, h("li", { class: "muted" }, t("memory.loading")));
  let rows: Memory[] = [];
  const short = (t: string) => (chars(t) > 60 ? Array.from(t).slice(0, 60).join("") + "…" : t);
  const render = (focus?: { id: string; what: "edit" | "delete" }) => {
    rows.sort((a, b) => (b.updatedAt ? timestampMs(b.updatedAt) : 0) - (a.updatedAt ? timestampMs(a.updatedAt) : 0));
    count.textContent = rows.length ? `(${num(rows.length)})` : "";
    list.replaceChildren(...rows.map(row));
    if (!rows.length) list.append(h("li", { class: "none muted" }, t("memory.none")));
    if (focus) list.querySelector<HTMLElement>(`li[data-memory-id="${focus.id}"] .${focus.what}-memory`)?.focus();
  };
  const row = (m: Memory): HTMLElement => {
    const text = h("p", { class: "memory-text", translate: "no" }, m.text);
    const edit = h("button", { type: "button", class: "link edit-memory", "aria-label": t("memory.editNamed", { text: short(m.text) }) }, t("memory.editButton")) as HTMLButtonElement;
    const del = h("button", { type: "button", class: "link danger delete-memory", "aria-label": t("memory.deleteNamed", { text: short(m.text) }) }, t("memory.deleteButton")) as HTMLButtonElement;
    const li = h("li", { "data-memory-id": m.memoryId }, text, h("div", { class: "row memory-actions" }, edit, del));
    edit.onclick = () => editRow(li, m);
    del.onclick = async () => {
      if (!confirm(t("memory.deleteConfirm", { text: short(m.text) }))) return;
      err.textContent = "";
      del.disabled = true;
      try {
        await memories.deleteMemory({ memoryId: m.memoryId });
      } catch (e) {
        del.disabled = false;
        if (ConnectError.from(e).code !== Code.NotFound) { err.textContent = memoryError(e); return; }
      }
      known.delete(m.memoryId);
      const i = rows.indexOf(m);
      rows = rows.filter((x) => x !== m);
      render();
      const next = rows[Math.min(i, rows.length - 1)];
      if (next) list.querySelector<HTMLElement>(`li[data-memory-id="${next.memoryId}"] .delete-memory`)?.focus();
      else add.focus();
    };
    return li;
  };
  const editRow = (li: HTMLElement, m: Memory) => {
    const fid = `memory-edit-${m.memoryId}`;
    const ta = h("textarea", { class: "memory-edit", id: fid, rows: 3, "aria-label": t("memory.edit"), "aria-describedby": `${fid}-count ${fid}-error` }) as HTMLTextAreaElement;
    ta.value = m.text;
    const e1 = h("p", { class: "error", id: `${fid}-error`, role: "alert" });
    const saveBtn = h("button", { class: "primary save-memory" }, t("memory.save")) as HTMLButtonElement;
    const form = h("form", { class: "memory-form" }, ta,
      h("div", { class: "row" }, saveBtn, h("button", { type: "button", class: "cancel-memory", onclick: () => render({ id: m.memoryId, what: "edit" }) }, t("memory.cancel")), counter(ta, `${fid}-count`)), e1) as HTMLFormElement;
    ta.addEventListener("input", () => { if (e1.textContent) fieldError(ta, e1, ""); });
    ta.onkeydown = (e) => {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); render({ id: m.memoryId, what: "edit" }); }
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    };
    form.onsubmit = async (e) => {
      e.preventDefault();
      const problem = memoryTextProblem(ta.value);
      if (problem) { fieldError(ta, e1, problem); ta.focus(); return; }
      if (ta.value.trim() === m.text) { render({ id: m.memoryId, what: "edit" }); return; }
      saveBtn.disabled = true;
      try {
        const u = (await memories.updateMemory({ memoryId: m.memoryId, text: ta.value })).memory!;
        known.set(u.memoryId, u.text);
        rows = rows.map((x) => (x === m ? u : x));
        render({ id: u.memoryId, what: "edit" });
        status.textContent = t("memory.saved");
        setTimeout(stateText, 3000);
      } catch (e2) { saveBtn.disabled = false; fieldError(ta, e1, memoryError(e2)); ta.focus(); }
    };
    li.replaceChildren(form);
    ta.focus();
    ta.setSelectionRange(ta.value.length, ta.value.length);
  };

  addForm.onsubmit = async (e) => {
    e.preventDefault();
    const problem = memoryTextProblem(add.value);
    if (problem) { fieldError(add, addErr, problem); add.focus(); return; }
    addBtn.disabled = true;
    try {
      const m = (await memories.createMemory({ text: add.value })).memory!;
      known.set(m.memoryId, m.text);
      rows = [m, ...rows.filter((x) => x.memoryId !== m.memoryId)];
      add.value = "";
      add.dispatchEvent(new Event("input"));
      render();
      add.focus();
    } catch (e2) { fieldError(add, addErr, memoryError(e2)); add.focus(); } finally { addBtn.disabled = false; }
  };

  const section = h("section", { id: "memory-section", "aria-labelledby": "memory-h" },
    h("h3", { id: "memory-h" }, t("memory.heading")),
    h("p", { class: "muted" }, t("memory.intro")),
    h("label", { class: "switch", for: "memory-enabled" }, sw, h("span", {}, t("memory.enabled"))),
    status, err, addForm,
    h("h4", { id: "memory-list-h" }, `${t("memory.list")} `, count), list);

  memories.getMemorySettings({}).then((r) => { sw.checked = r.settings?.enabled ?? true; sw.disabled = false; stateText(); },
    (e) => { err.textContent = memoryError(e); });
  listAll().then((all) => { rows = all; render(); }, (e) => { list.textContent = ""; err.textContent = memoryError(e); });
  return section;
}
