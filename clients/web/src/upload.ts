// Attachments: images are shrunk in the browser to fit 1280×1280 and sent as
// JPEG (quality 0.8); every file goes by one direct PUT to the upload URL that
// CreateUpload returns, with progress, then CompleteUpload checks it.
import { attachments, Code, ConnectError, describe } from "./api";
import { FieldViolationSchema } from "../../ts/src/gen/parley/v1/errors_pb";
import { AttachmentStatus } from "../../ts/src/gen/parley/v1/attachment_pb";

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
  return new Promise((ok, fail) => canvas.toBlob((b) => (b ? ok(b) : fail(new Error("could not encode the image"))), "image/jpeg", 0.8));
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
const acceptedKinds = "images, PDF, Word (.docx), PowerPoint (.pptx), text, Markdown or CSV files";

/** Why a file cannot be attached, before it is sent ("" when it can). */
export function refusedFile(file: File): string {
  if (file.type.startsWith("image/") || docTypes[file.name.split(".").pop()!.toLowerCase()]) return "";
  return `${file.name} can't be attached. You can attach ${acceptedKinds}.`;
}

function kindOf(file: File): string {
  const t = file.type.startsWith("image/") ? "image/" : docType(file);
  return t === "image/" ? "images" : t === docTypes.pdf ? "PDFs" : t === docTypes.docx ? "Word documents"
    : t === docTypes.pptx ? "presentations" : "text files";
}

/** The server read an uploaded file and refused it (its content, not its name). */
class UploadRefused extends Error {}

/** An upload's refusal in words a person reads. */
export function uploadError(file: File, err: unknown): string {
  if (err instanceof UploadRefused) {
    return /not accepted|not an? /.test(err.message) ? `${file.name} can't be attached: its content does not look like one of the ${kindOf(file)} it is named as.`
      : `${file.name} can't be attached: ${err.message}.`;
  }
  const e = ConnectError.from(err);
  if (e.code === Code.Unimplemented) return "Attachments are not available on this server yet.";
  const f = e.findDetails(FieldViolationSchema)[0];
  if (f?.field === "size_bytes") {
    const max = /to (\d+) bytes/.exec(f.description)?.[1];
    const mb = max ? Number(max) / 1e6 : 0;
    return `${file.name} is too large — the limit for ${kindOf(file)} is ${mb >= 1 ? `${Math.round(mb * 10) / 10} MB` : `${Math.round(mb * 1000)} KB`}.`;
  }
  if (f?.field === "mime_type") return `${file.name} can't be attached. You can attach ${acceptedKinds}.`;
  return `${file.name} could not be attached: ${describe(err)}`;
}

async function sha256(b: Blob): Promise<string> {
  if (!crypto.subtle) throw new Error("uploads need a secure context (https or localhost)");
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", await b.arrayBuffer()));
  return Array.from(d, (x) => x.toString(16).padStart(2, "0")).join("");
}

function put(url: string, method: string, headers: Record<string, string>, body: Blob, progress: (f: number) => void): Promise<void> {
  return new Promise((ok, fail) => {
    const x = new XMLHttpRequest();
    x.open(method || "PUT", url);
    for (const [k, v] of Object.entries(headers)) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => e.lengthComputable && progress(e.loaded / e.total);
    x.onload = () => (x.status >= 200 && x.status < 300 ? ok() : fail(new Error(`upload refused (HTTP ${x.status}) ${x.responseText.slice(0, 200)}`)));
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
  if (done.attachment?.status !== AttachmentStatus.READY) throw new UploadRefused(done.attachment?.failureReason || "refused");
  progress(1);
  return { id: up.attachmentId, name };
}
