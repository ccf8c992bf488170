// A small Markdown renderer for streamed answers: paragraphs, headings, lists,
// block quotes, rules, fenced code blocks, and inline code, bold, italic and
// http(s) links. Everything is escaped; no raw HTML passes through.
//
// StreamingMarkdown renders an answer while it grows without re-rendering the
// whole message per token: blocks that are complete (ended by a blank line or a
// closing fence) are rendered once and never touched again; only the open block
// at the end is redrawn, and an open code block is appended to as text. Tokens
// are batched per animation frame.

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function inline(src: string): string {
  let out = "";
  // Code spans first: their content is literal.
  const parts = src.split(/(`+[^`]*`+)/);
  for (const p of parts) {
    if (p.length > 1 && p.startsWith("`") && p.endsWith("`")) {
      out += "<code>" + esc(p.replace(/^`+|`+$/g, "")) + "</code>";
      continue;
    }
    out += esc(p)
      .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>')
      .replace(/\*\*([^*]+)\*\*|__([^_]+)__/g, (_, a, b) => "<strong>" + (a ?? b) + "</strong>")
      .replace(/(^|[^*\w])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
      .replace(/(^|\W)_([^_\s][^_]*)_(?=\W|$)/g, "$1<em>$2</em>");
  }
  return out;
}

const fenceRE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const listRE = /^\s*([-*+]|\d+[.)])\s+/;

/** Renders complete Markdown source to HTML. */
export function render(src: string): string {
  const lines = src.split("\n");
  let html = "";
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = fenceRE.exec(line);
    if (fence) {
      const close = fence[1];
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(close)) body.push(lines[i++]);
      i++;
      html += codeBlock(fence[2], body.join("\n"));
      continue;
    }
    if (/^\s*$/.test(line)) { i++; continue; }
    const h = /^(#{1,6})\s+(.*)$/.exec(line);
    if (h) { html += `<h${h[1].length}>${inline(h[2])}</h${h[1].length}>`; i++; continue; }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { html += "<hr>"; i++; continue; }
    if (line.startsWith(">")) {
      const q: string[] = [];
      while (i < lines.length && lines[i].startsWith(">")) q.push(lines[i++].replace(/^>\s?/, ""));
      html += "<blockquote>" + render(q.join("\n")) + "</blockquote>";
      continue;
    }
    const li = listRE.exec(line);
    if (li) {
      const ordered = /\d/.test(li[1]);
      html += ordered ? "<ol>" : "<ul>";
      while (i < lines.length && listRE.test(lines[i])) {
        let item = lines[i++].replace(listRE, "");
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listRE.test(lines[i])) item += " " + lines[i++].trim();
        html += "<li>" + inline(item) + "</li>";
      }
      html += ordered ? "</ol>" : "</ul>";
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !fenceRE.test(lines[i]) && !/^#{1,6}\s/.test(lines[i]) && !(para.length && listRE.test(lines[i]))) {
      para.push(lines[i++]);
    }
    html += "<p>" + inline(para.join("\n")).replace(/\n/g, "<br>") + "</p>";
  }
  return html;
}

function codeBlock(lang: string, code: string): string {
  return `<div class="code"><div class="code-bar"><span>${esc(lang || "code")}</span><button class="copy" type="button">Copy</button></div><pre><code>${esc(code)}</code></pre></div>`;
}

/** Appends streamed Markdown to an element, redrawing only the open block. */
export class StreamingMarkdown {
  private src = "";
  private frozen = 0; // src[0:frozen] is rendered into frozen nodes for good
  private live: HTMLElement; // the open tail's container
  private liveCode: { text: Text; done: number } | null = null; // an open fence, appended to
  private scheduled = 0;
  onFlush?: () => void;

  constructor(private root: HTMLElement) {
    this.live = document.createElement("div");
    this.live.className = "live";
    root.append(this.live);
  }

  get text() { return this.src; }

  append(s: string) {
    this.src += s;
    if (!this.scheduled) this.scheduled = requestAnimationFrame(() => this.flush());
  }

  /** Renders what has arrived; called once per frame, or at the end. */
  flush() {
    if (this.scheduled) cancelAnimationFrame(this.scheduled);
    this.scheduled = 0;
    // Find the last block boundary after `frozen`: a blank line outside a fence,
    // or the end of a closing fence line.
    let inFence: string | null = null;
    let boundary = this.frozen;
    let pos = this.frozen;
    let fenceStart = -1;
    while (true) {
      const nl = this.src.indexOf("\n", pos);
      if (nl < 0) break;
      const line = this.src.slice(pos, nl);
      const f = fenceRE.exec(line);
      if (inFence) {
        if (line.trimStart().startsWith(inFence)) { inFence = null; boundary = nl + 1; }
      } else if (f) {
        inFence = f[1]; fenceStart = pos;
      } else if (/^\s*$/.test(line)) {
        boundary = nl + 1;
      }
      pos = nl + 1;
    }
    if (boundary > this.frozen) {
      const tpl = document.createElement("template");
      tpl.innerHTML = render(this.src.slice(this.frozen, boundary));
      this.live.before(tpl.content);
      this.frozen = boundary;
      this.liveCode = null;
      this.live.textContent = "";
    }
    const tail = this.src.slice(this.frozen);
    if (inFence && fenceStart === this.frozen) {
      // The open block is a code block: append the new code as text.
      const firstNL = tail.indexOf("\n");
      const body = tail.slice(firstNL + 1);
      if (!this.liveCode) {
        const lang = fenceRE.exec(tail)![2];
        this.live.innerHTML = codeBlock(lang, "");
        const code = this.live.querySelector("code")!;
        const text = document.createTextNode("");
        code.append(text);
        this.liveCode = { text, done: 0 };
      }
      // Hold back a last line that may be the closing fence.
      const upto = body.lastIndexOf("\n") + 1;
      if (upto > this.liveCode.done) {
        this.liveCode.text.appendData(body.slice(this.liveCode.done, upto));
        this.liveCode.done = upto;
      }
    } else {
      this.liveCode = null;
      this.live.innerHTML = render(tail);
    }
    this.onFlush?.();
  }

  /** Renders the whole answer once more, now that it is complete. */
  finish() {
    if (this.scheduled) cancelAnimationFrame(this.scheduled);
    this.scheduled = 0;
    const tail = this.src.slice(this.frozen);
    this.liveCode = null;
    this.live.innerHTML = render(tail);
    this.onFlush?.();
  }
}
