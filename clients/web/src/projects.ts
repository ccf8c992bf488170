// Projects: workspaces of chats that share instructions and files. The
// sidebar lists them; a project's page (#/p/{id}) edits its name and
// instructions, shows its files with their indexing state (polled while any
// is indexing), adds files (FileService.CreateFile, then AddFiles on the
// project's vector store) and removes them, lists its chats, and deletes it.
// The chat composer under the page starts a new chat in the project (files
// dropped there are attachments of that message, as on any chat).
import { Code, ConnectError, convs, describe, files, projects, stores, timestampMs } from "./api";
import type { Project } from "../../ts/src/gen/parley/v1/project_pb";
import { VectorStoreFileStatus, type VectorStoreFile } from "../../ts/src/gen/parley/v1/vector_store_pb";
import { $, h, timeEl, when } from "./dom";
import { docAccept, docType } from "./upload";
import { locale, t, tp } from "./i18n";

export interface ProjectHooks {
  /** Shows an error of the app (the banner, or the log-in form). */
  fail(err: unknown): void;
  /** The conversation list changed (a project's chats were deleted). */
  chatsChanged(): void;
}
let hooks: ProjectHooks;
const names = new Map<string, string>(); // project id → name, for the chats' breadcrumb
const filenames = new Map<string, string>(); // file id → file name ("" once the file is gone)

/** The name of a project the sidebar lists ("" when unknown). */
export const projectName = (id: string) => names.get(id) ?? "";

export function initProjects(h0: ProjectHooks) {
  hooks = h0;
  $("new-project").onclick = newProject;
}

/** The sidebar's list of projects. */
export async function loadProjects() {
  const list = $("project-list");
  try {
    const all: Project[] = [];
    let pageToken = "";
    do {
      const r = await projects.listProjects({ pageSize: 100, pageToken });
      all.push(...r.projects);
      pageToken = r.nextPageToken;
    } while (pageToken);
    names.clear();
    for (const p of all) names.set(p.projectId, p.name);
    list.replaceChildren(...all.map((p) => h("li", { "data-project-id": p.projectId },
      h("a", { href: `#/p/${p.projectId}`, class: "title", translate: "no" }, h("span", { class: "icon", "aria-hidden": "true" }, "▣"), p.name))));
    markProject();
  } catch (err) { hooks.fail(err); }
}

/** Marks the open project in the sidebar. */
export function markProject() {
  const m = /^#\/p\/(.+)$/.exec(location.hash);
  const id = m ? decodeURIComponent(m[1]) : "";
  for (const li of $("project-list").children) {
    const on = (li as HTMLElement).dataset.projectId === id;
    li.classList.toggle("active", on);
    li.querySelector("a")?.toggleAttribute("aria-current", on);
  }
}

/** The New project dialog: a name and optional instructions; opens the project made. */
function newProject() {
  const dlg = $<HTMLDialogElement>("project-dialog");
  const form = $<HTMLFormElement>("project-create-form");
  form.reset();
  $("project-dialog-error").textContent = "";
  dlg.showModal();
  $("project-name").focus();
  form.onsubmit = async (e) => {
    if ((e as SubmitEvent).submitter?.id !== "project-create") return;
    e.preventDefault();
    const f = new FormData(form);
    const btn = $<HTMLButtonElement>("project-create");
    btn.disabled = true;
    try {
      const p = (await projects.createProject({ name: String(f.get("name") ?? ""), instructions: String(f.get("instructions") ?? "") })).project!;
      names.set(p.projectId, p.name);
      dlg.close();
      await loadProjects();
      location.hash = `#/p/${p.projectId}`;
    } catch (err) {
      if (ConnectError.from(err).code === Code.Unauthenticated) { dlg.close(); hooks.fail(err); }
      else $("project-dialog-error").textContent = describe(err);
    } finally { btn.disabled = false; }
  };
}

/** A file's indexing state, in words. */
function statusText(s: VectorStoreFileStatus): string {
  switch (s) {
    case VectorStoreFileStatus.IN_PROGRESS: return t("project.file.indexing");
    case VectorStoreFileStatus.COMPLETED: return t("project.file.indexed");
    case VectorStoreFileStatus.FAILED: return t("project.file.failed");
    case VectorStoreFileStatus.CANCELLED: return t("project.file.cancelled");
    default: return t("project.file.unknown");
  }
}
const statusName: Record<number, string> = {
  [VectorStoreFileStatus.IN_PROGRESS]: "in-progress",
  [VectorStoreFileStatus.COMPLETED]: "completed",
  [VectorStoreFileStatus.FAILED]: "failed",
  [VectorStoreFileStatus.CANCELLED]: "cancelled",
};
/** A decimal in the chosen locale, without grouping ("1.5", "1,5"). */
const decimal = (n: number) => n.toLocaleString(locale(), { useGrouping: false });
function size(n: bigint | number): string {
  const b = Number(n);
  if (b < 1024) return t("size.bytes", { n: decimal(b) });
  if (b < 1024 * 1024) return t("size.kb", { n: decimal(Math.round(b / 102.4) / 10) });
  return t("size.mb", { n: decimal(Math.round(b / 104857.6) / 10) });
}

/**
 * Shows project id in root (the messages pane) unless wanted() says the page
 * was left meanwhile: resolves to the project, or undefined when it is not
 * shown (not found: the page says so).
 */
export async function showProject(id: string, root: HTMLElement, wanted: () => boolean): Promise<Project | undefined> {
  root.replaceChildren(h("p", { class: "muted" }, t("project.loading")));
  let p: Project;
  try {
    p = (await projects.getProject({ projectId: id })).project!;
    if (!wanted()) return undefined;
  } catch (err) {
    if (!wanted()) return undefined;
    if (ConnectError.from(err).code === Code.NotFound || ConnectError.from(err).code === Code.InvalidArgument) {
      root.replaceChildren(h("div", { class: "project", id: "project-missing" }, h("h2", {}, t("project.notFound")),
        h("p", { class: "muted" }, t("project.notFoundHint")), h("a", { href: "#/" }, t("project.startChat"))));
    } else { root.textContent = ""; hooks.fail(err); }
    return undefined;
  }
  names.set(p.projectId, p.name);
  const err = h("p", { class: "error", id: "project-error", role: "alert" });
  const title = h("h2", { id: "project-title", translate: "no" }, p.name);
  const meta = h("span", { class: "muted", id: "project-meta" });

  // Name and instructions.
  const nameIn = h("input", { id: "project-name-edit", maxlength: 100, required: true, autocomplete: "off", value: p.name }) as HTMLInputElement;
  const instr = h("textarea", { id: "project-instructions-edit", rows: 4, maxlength: 8000, placeholder: t("project.instructions.placeholder") }) as HTMLTextAreaElement;
  instr.value = p.instructions;
  const saved = h("span", { class: "muted", id: "project-saved", role: "status" });
  const form = h("form", { id: "project-form", class: "project-form" },
    h("label", { for: "project-name-edit" }, t("project.name")), nameIn,
    h("label", { for: "project-instructions-edit" }, t("project.instructions")),
    h("p", { class: "muted hint", id: "project-instructions-hint" }, t("project.instructions.hint")),
    instr, h("div", { class: "row" }, h("button", { class: "primary", id: "project-save" }, t("project.save")), saved)) as HTMLFormElement;
  instr.setAttribute("aria-describedby", "project-instructions-hint");
  const dirty = () => { saved.textContent = ""; };
  nameIn.oninput = dirty; instr.oninput = dirty;
  form.onsubmit = async (e) => {
    e.preventDefault();
    err.textContent = "";
    const name = nameIn.value.trim();
    const changes: { name?: string; instructions?: string } = {};
    if (name !== p.name) changes.name = name;
    if (instr.value !== p.instructions) changes.instructions = instr.value;
    if (!Object.keys(changes).length) { saved.textContent = t("project.nothingToSave"); return; }
    try {
      p = (await projects.updateProject({ projectId: p.projectId, ...changes })).project!;
      nameIn.value = p.name; instr.value = p.instructions;
      title.textContent = p.name;
      document.title = `${p.name} · Parley`;
      saved.textContent = t("project.saved");
      if (changes.name !== undefined) loadProjects();
    } catch (e2) { err.textContent = describe(e2); }
  };

  // Files.
  const fileInput = h("input", { type: "file", id: "project-file", multiple: true, hidden: true, tabindex: -1, accept: docAccept }) as HTMLInputElement;
  const addBtn = h("button", { type: "button", id: "project-add-files" }, t("project.addFiles")) as HTMLButtonElement;
  const fileList = h("ul", { id: "project-files", class: "project-files", "aria-live": "polite" });
  const uploading = new Set<HTMLElement>();
  let rows: VectorStoreFile[] = [];
  let pollTimer = 0;
  const alive = () => root.contains(title);
  const render = () => {
    const done = rows.filter((f) => f.status === VectorStoreFileStatus.COMPLETED).length;
    const busy = rows.filter((f) => f.status === VectorStoreFileStatus.IN_PROGRESS).length;
    meta.textContent = rows.length ? `${tp("project.files", rows.length)}${busy ? ` · ${tp("project.indexing", busy)}` : done === rows.length ? ` · ${t("project.allIndexed")}` : ""}` : t("project.noFiles");
    const items = rows.map((f) => {
      const known = filenames.get(f.fileId);
      const name = known === undefined ? t("project.file") : known || t("project.deletedFile");
      const st = h("span", { class: `status ${statusName[f.status] ?? ""}` }, statusText(f.status));
      return h("li", { "data-file-id": f.fileId, "data-status": statusName[f.status] ?? "unknown" },
        h("span", { class: "filename", translate: known ? "no" : undefined }, name),
        h("span", { class: "file-state" }, st,
          f.status === VectorStoreFileStatus.COMPLETED && f.usageBytes ? h("span", { class: "muted" }, ` · ${t("project.textSize", { size: size(f.usageBytes) })}`) : "",
          f.status === VectorStoreFileStatus.FAILED && f.lastError ? h("span", { class: "last-error" }, `: ${f.lastError}`) : ""),
        h("button", { type: "button", class: "link danger remove-file", "aria-label": t("project.removeNamed", { name }), onclick: () => removeFile(f.fileId, name) }, t("project.remove")));
    });
    fileList.replaceChildren(...items, ...uploading);
    if (!items.length && !uploading.size) fileList.append(h("li", { class: "none muted" }, t("project.filesHint")));
  };
  const refreshFiles = async () => {
    clearTimeout(pollTimer);
    try {
      const all: VectorStoreFile[] = [];
      let pageToken = "";
      do {
        const r = await stores.listVectorStoreFiles({ vectorStoreId: p.vectorStoreId, pageSize: 100, pageToken });
        all.push(...r.files);
        pageToken = r.nextPageToken;
      } while (pageToken);
      await Promise.all(all.filter((f) => !filenames.has(f.fileId)).map((f) =>
        files.getFile({ fileId: f.fileId }).then((r) => { filenames.set(f.fileId, r.file!.filename); }, () => { filenames.set(f.fileId, ""); })));
      if (!alive()) return;
      rows = all.sort((a, b) => (a.createdAt ? timestampMs(a.createdAt) : 0) - (b.createdAt ? timestampMs(b.createdAt) : 0));
      render();
    } catch (e) {
      if (!alive()) return;
      err.textContent = describe(e);
    }
    if (alive() && rows.some((f) => f.status === VectorStoreFileStatus.IN_PROGRESS)) pollTimer = window.setTimeout(refreshFiles, 1500);
  };
  const addFiles = async (list: File[]) => {
    err.textContent = "";
    await Promise.all(list.map(async (file) => {
      const row = h("li", { class: "uploading", "data-status": "uploading" }, h("span", { class: "filename", translate: "no" }, file.name),
        h("span", { class: "file-state" }, h("span", { class: "status in-progress" }, t("project.uploading"))));
      uploading.add(row);
      render();
      try {
        const content = new Uint8Array(await file.arrayBuffer());
        const f = (await files.createFile({ filename: file.name, purpose: "assistants", content, mimeType: docType(file) })).file!;
        filenames.set(f.fileId, f.filename);
        await stores.addFiles({ vectorStoreId: p.vectorStoreId, files: [{ fileId: f.fileId }] });
      } catch (e) {
        err.textContent = `${file.name}: ${describe(e)}`;
      } finally {
        uploading.delete(row);
      }
    }));
    if (alive()) await refreshFiles();
  };
  const removeFile = async (fileId: string, name: string) => {
    err.textContent = "";
    try {
      await stores.removeFile({ vectorStoreId: p.vectorStoreId, fileId });
      rows = rows.filter((f) => f.fileId !== fileId);
      render();
      addBtn.focus();
    } catch (e) { err.textContent = `${name}: ${describe(e)}`; }
  };
  addBtn.onclick = () => fileInput.click();
  fileInput.onchange = () => { if (fileInput.files?.length) addFiles(Array.from(fileInput.files)); fileInput.value = ""; };

  // Chats.
  const chats = h("ul", { id: "project-chats", class: "project-chats" }, h("li", { class: "muted" }, t("project.loading")));
  convs.listConversations({ projectId: p.projectId, pageSize: 50 }).then((r) => {
    chats.replaceChildren(...r.conversations.map((c) => h("li", { "data-id": c.conversationId },
      h("a", { href: `#/c/${c.conversationId}`, translate: c.title ? "no" : undefined }, c.title || t("project.newChat")),
      h("span", { class: "muted" }, c.updatedAt ? timeEl(timestampMs(c.updatedAt)) : ""))));
    if (!r.conversations.length) chats.append(h("li", { class: "none muted" }, t("project.noChats")));
  }, (e) => { chats.textContent = ""; err.textContent = describe(e); });

  const del = h("button", { type: "button", class: "danger", id: "delete-project" }, t("project.delete")) as HTMLButtonElement;
  del.onclick = async () => {
    if (!confirm(t("project.deleteConfirm", { name: p.name }))) return;
    try {
      await projects.deleteProject({ projectId: p.projectId });
      names.delete(p.projectId);
      location.hash = "#/";
      loadProjects();
      hooks.chatsChanged();
    } catch (e) { err.textContent = describe(e); }
  };

  root.replaceChildren(h("div", { class: "project", "data-project-id": p.projectId },
    h("div", { class: "project-head" }, h("div", {}, title, meta), del),
    err,
    h("section", { "aria-labelledby": "project-settings-h" }, h("h3", { id: "project-settings-h", class: "visually-hidden" }, t("project.settings")), form),
    h("section", { "aria-labelledby": "project-files-h" },
      h("div", { class: "row section-head" }, h("h3", { id: "project-files-h" }, t("project.filesHeading")), addBtn, fileInput), fileList),
    h("section", { "aria-labelledby": "project-chats-h" }, h("h3", { id: "project-chats-h" }, t("project.chats")), chats)));
  fileList.replaceChildren(h("li", { class: "muted" }, t("project.loading")));
  refreshFiles();
  return p;
}
