// Attachments: images are shrunk in the browser to fit 1280×1280 and sent as
// JPEG (quality 0.8); every file goes by one direct PUT to the upload URL that
// CreateUpload returns, with progress, then CompleteUpload checks it.
import { attachments } from "./api";
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
  if (done.attachment?.status !== AttachmentStatus.READY) throw new Error(`${name}: ${done.attachment?.failureReason || "refused"}`);
  progress(1);
  return { id: up.attachmentId, name };
}
