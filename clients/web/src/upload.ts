// Attachments: images are shrunk in the browser to fit 1280×1280 and sent as
// JPEG (quality 0.8); every file goes by one direct PUT to the upload URL that
// CreateUpload returns, with progress, then CompleteUpload checks it.
import { attachments, Code, ConnectError, describe } from "./api";
import { FieldViolationSchema } from "../../ts/src/gen/parley/v1/errors_pb";
import { AttachmentStatus } from "../../ts/src/gen/parley/v1/attachment_pb";
import { locale, t } from "./i18n";

export const MAX_SIDE = 1280;

export async function compressImage(file: Blob): Promise<Blob> {
  const bmp = await createImageBitmap(file);
  const scale = Math.min(1, MAX_SIDE / bmp.width, MAX_SIDE / bmp.height);
  const w = Math.max(1, Math.round(bmp.width * scale)), h = Math.max(1, Math.round(bmp.height * scale));
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d")!;
  ctx.fillStyle = "#fff"; // JPEG has no alpha
  ctx.fillRect(0, 0, w, h);
  ctx.drawImage(bmp, 0, 0, w, h);
  bmp.close();
  return new Promise((ok, fail) => canvas.toBlob((b) => (b ? ok(b) : fail(new Error(t("upload.encodeFailed")))), "image/jpeg", 0.8));
}

const docTypes: Record<string, string> = {
  pdf: "application/pdf", txt: "text/plain", md: "text/markdown", csv: "text/csv",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};

/** The documents a picker offers (a project's files are these). */
export const docAccept = ".pdf,.docx,.pptx,.txt,.md,.csv";

/** A document's MIME type: the browser's when it is one of the accepted, else the one its extension names. */
export function docType(file: File): string {
  if (file.type && Object.values(docTypes).includes(file.type)) return file.type;
  return docTypes[file.name.split(".").pop()!.toLowerCase()] ?? file.type;
}

/** What the picker, drag-and-drop and paste accept: images and these documents. */
export const attachAccept = "image/*," + docAccept;
const acceptedKinds = () => t("upload.acceptedKinds");
/** A decimal in the chosen locale, without grouping ("1.5", "1,5"). */
const decimal = (n: number) => n.toLocaleString(locale(), { useGrouping: false });

/** Why a file cannot be attached, before it is sent ("" when it can). */
export function refusedFile(file: File): string {
  if (file.type.startsWith("image/") || docTypes[file.name.split(".").pop()!.toLowerCase()]) return "";
  return t("upload.refusedKind", { name: file.name, kinds: acceptedKinds() });
}

function kindOf(file: File): string {
  const type = file.type.startsWith("image/") ? "image/" : docType(file);
  return type === "image/" ? t("upload.kind.images") : type === docTypes.pdf ? t("upload.kind.pdfs") : type === docTypes.docx ? t("upload.kind.word")
    : type === docTypes.pptx ? t("upload.kind.presentations") : t("upload.kind.text");
}

/** The server read an uploaded file and refused it (its content, not its name). */
class UploadRefused extends Error {}

/** An upload's refusal in words a person reads. */
export function uploadError(file: File, err: unknown): string {
  if (err instanceof UploadRefused) {
    return /not accepted|not an? /.test(err.message) ? t("upload.contentMismatch", { name: file.name, kinds: kindOf(file) })
      : t("upload.refusedBecause", { name: file.name, reason: err.message });
  }
  const e = ConnectError.from(err);
  if (e.code === Code.Unimplemented) return t("upload.unavailable");
  const f = e.findDetails(FieldViolationSchema)[0];
  if (f?.field === "size_bytes") {
    const max = /to (\d+) bytes/.exec(f.description)?.[1];
    const mb = max ? Number(max) / 1e6 : 0;
    const limit = mb >= 1 ? t("size.mb", { n: decimal(Math.round(mb * 10) / 10) }) : t("size.kb", { n: decimal(Math.round(mb * 1000)) });
    return t("upload.tooLarge", { name: file.name, kinds: kindOf(file), limit });
  }
  if (f?.field === "mime_type") return t("upload.refusedKind", { name: file.name, kinds: acceptedKinds() });
  return t("upload.failed", { name: file.name, error: describe(err) });
}

async function sha256(b: Blob): Promise<string> {
  if (!crypto.subtle) throw new Error(t("upload.insecure"));
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", await b.arrayBuffer()));
  return Array.from(d, (x) => x.toString(16).padStart(2, "0")).join("");
}

function put(url: string, method: string, headers: Record<string, string>, body: Blob, progress: (f: number) => void): Promise<void> {
  return new Promise((ok, fail) => {
    const x = new XMLHttpRequest();
    x.open(method || "PUT", url);
    for (const [k, v] of Object.entries(headers)) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => e.lengthComputable && progress(e.loaded / e.total);
    x.onload = () => (x.status >= 200 && x.status < 300 ? ok() : fail(new Error(t("upload.httpRefused", { status: x.status, body: x.responseText.slice(0, 200) }))));
    // Not for people: describe() tells a network error by these words and says so itself.
    x.onerror = () => fail(new Error("upload failed: network error"));
    x.send(body);
  });
}

/** Uploads one file and returns its attachment id. */
export async function upload(file: File, progress: (f: number) => void): Promise<{ id: string; name: string }> {
  let body: Blob = file, name = file.name, type = file.type;
  if (type.startsWith("image/")) {
    body = await compressImage(file);
    name = name.replace(/\.[^.]*$/, "") + ".jpg";
    type = "image/jpeg";
  } else {
    type = docType(file);
  }
  const up = await attachments.createUpload({ filename: name, mimeType: type, sizeBytes: BigInt(body.size), sha256: await sha256(body) });
  await put(up.uploadUrl, up.method, up.headers, body, progress);
  const done = await attachments.completeUpload({ attachmentId: up.attachmentId });
  if (done.attachment?.status !== AttachmentStatus.READY) throw new UploadRefused(done.attachment?.failureReason || t("upload.refused"));
  progress(1);
  return { id: up.attachmentId, name };
}
