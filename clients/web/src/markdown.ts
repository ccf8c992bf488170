// Markdown for answers: marked (GitHub-flavoured: tables, nested and task
// lists, strikethrough, autolinks), code coloured by highlight.js (its core
// and a few languages, in highlight.ts) and math ($…$, $$…$$, \(…\), \[…\])
// typeset by KaTeX as MathML. Both load on first use, so a page without code
// or math never fetches them, and colour or typeset in place: the text of a
// block does not change, so nothing already shown moves.
// Raw HTML is shown as text, links open in a new tab and only http(s) and
// mailto are followed; images are shown as links (nothing loads by itself).
//
// StreamingMarkdown renders an answer while it grows without touching what is
// already on screen: blocks that are complete (a blank line followed by a new
// top-level block, or a closing fence) are rendered once and never redrawn;
// only the open block at the end is, and an open code block is appended to
// as text. Tokens are batched per animation frame.
import { Marked, type Tokens, type TokenizerExtension, type RendererExtension } from "marked";
import { t } from "./i18n";
export const esc = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

/**
 * A code block's bar: its language (content, not translated) or the word
 * "code", and the Copy button, the app's words inside an answer that is not
 * to be translated (translate="yes" marks them so).
 */
const codeBar = (lang: string) =>
  `<div class="code-bar"><span translate="${lang ? "no" : "yes"}">${esc(lang || t("code.label"))}</span><button class="copy" type="button" translate="yes">${esc(t("code.copy"))}</button></div>`;

function codeBlock(lang: string, code: string): string {
  return `<div class="code">${codeBar(lang)}<pre><code class="hljs" data-lang="${esc(lang.toLowerCase())}">${esc(code)}</code></pre></div>`;
}

const mathSpan = (tex: string, display: boolean) =>
  `<${display ? "div" : "span"} class="math${display ? " display" : ""}" data-tex="${esc(tex)}">${esc(tex)}</${display ? "div" : "span"}>`;

const mathBlock: TokenizerExtension & RendererExtension = {
  name: "mathBlock",
  level: "block",
  start: (src) => src.match(/^ {0,3}(\$\$|\\\[)/m)?.index,
  tokenizer(src) {
    const m = /^ {0,3}\$\$([\s\S]+?)\$\$[ \t]*(?:\n|$)/.exec(src) ?? /^ {0,3}\\\[([\s\S]+?)\\\][ \t]*(?:\n|$)/.exec(src);
    if (m) return { type: "mathBlock", raw: m[0], text: m[1].trim() };
  },
  renderer: (t) => mathSpan(t.text, true),
};
const mathInline: TokenizerExtension & RendererExtension = {
  name: "mathInline",
  level: "inline",
  start: (src) => src.match(/\$|\\\(/)?.index,
  tokenizer(src) {
    const m = /^\$\$([^$]+?)\$\$/.exec(src) ?? /^\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<!\s)\$(?![\d$])/.exec(src) ?? /^\\\((.+?)\\\)/.exec(src);
    if (m) return { type: "mathInline", raw: m[0], text: m[1] };
  },
  renderer: (t) => mathSpan(t.text, false),
};

const md = new Marked({ gfm: true, breaks: true });
md.use({
  extensions: [mathBlock, mathInline],
  renderer: {
    code: (t: Tokens.Code) => codeBlock((t.lang ?? "").split(/\s/)[0], t.text),
    html: (t: Tokens.HTML | Tokens.Tag) => esc(t.text),
    link(t: Tokens.Link) {
      const text = this.parser.parseInline(t.tokens);
      if (!/^(https?:|mailto:)/i.test(t.href)) return text;
      return `<a href="${esc(t.href)}" target="_blank" rel="noopener noreferrer">${text}</a>`;
    },
    image(t: Tokens.Image) {
      if (!/^https?:/i.test(t.href)) return esc(t.text);
      return `<a href="${esc(t.href)}" target="_blank" rel="noopener noreferrer">${esc(t.text || t.href)}</a>`;
    },
  },
});

/** Renders complete Markdown source to HTML (then call upgrade on its container). */
export function render(src: string): string {
  return md.parse(src, { async: false }) as string;
}

type Highlight = typeof import("./highlight");
let hl: Highlight | undefined;
let hlLoading: Promise<Highlight> | undefined;
/** Loads highlight.js ahead of need (an idle moment after start, or an open fence). */
export function preloadHighlight() {
  hlLoading ??= import("./highlight").then((m) => (hl = m));
}
/** Colours the closed code blocks under root; loads highlight.js the first time. */
export function upgradeCode(root: ParentNode) {
  const todo = root.querySelectorAll<HTMLElement>("code[data-lang]:not([data-lang='']):not(.done)");
  if (!todo.length) return;
  if (!hl) {
    hlLoading ??= import("./highlight").then((m) => (hl = m));
    hlLoading.then(() => upgradeCode(root), () => { /* plain text stays */ });
    return;
  }
  for (const el of todo) {
    el.classList.add("done");
    const html = hl.highlight(el.textContent ?? "", el.dataset.lang!);
    if (html !== undefined) el.innerHTML = html;
  }
}

/** Typesets math and colours code under root (both lazily). */
export function upgrade(root: ParentNode) {
  upgradeMath(root);
  upgradeCode(root);
}

type Katex = typeof import("katex");
let katex: Katex | undefined;
let loading: Promise<Katex> | undefined;
/** Typesets the math placeholders under root; loads KaTeX the first time. */
export function upgradeMath(root: ParentNode) {
  const todo = root.querySelectorAll<HTMLElement>(".math:not(.done)");
  if (!todo.length) return;
  if (!katex) {
    loading ??= import("katex").then((m) => (katex = (m.default ?? m) as Katex));
    loading.then(() => upgradeMath(root), () => { /* the source stays visible */ });
    return;
  }
  for (const el of todo) {
    try {
      katex.render(el.dataset.tex ?? "", el, { output: "mathml", displayMode: el.classList.contains("display"), throwOnError: false });
    } catch { /* leave the source */ }
    el.classList.add("done");
  }
}

const fenceRE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const mathFenceRE = /^ {0,3}(\$\$|\\\[)\s*$/;
const listRE = /^ ?([-*+]|\d+[.)])\s/;

/** Appends streamed Markdown to an element, redrawing only the open block. */
export class StreamingMarkdown {
  private src = "";
  private frozen = 0; // src[0:frozen] is rendered into frozen nodes for good
  private live: HTMLElement; // the open tail's container
  private liveCode: { text: Text; done: number } | null = null; // an open fence, appended to
  private scheduled = 0;
  onFlush?: () => void;

  constructor(private root: HTMLElement) {
    root.setAttribute("translate", "no"); // an answer is content, not the app's words
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
    // The last block boundary after `frozen`: a blank line outside a fence
    // whose next line starts a new top-level block (indented less than two
    // spaces, not a list item: a list stays open until something else follows
    // it), the start of a fence, or the end of a closing fence line.
    let inFence: string | null = null;
    let boundary = this.frozen;
    let pos = this.frozen;
    let fenceStart = -1;
    let blankAt = -1; // the end of the last blank line, waiting for the next line
    while (true) {
      const nl = this.src.indexOf("\n", pos);
      if (nl < 0) break;
      const line = this.src.slice(pos, nl);
      if (inFence) {
        if (inFence === "$$" || inFence === "\\[" ? line.trim() === (inFence === "$$" ? "$$" : "\\]") : line.trimStart().startsWith(inFence)) {
          inFence = null;
          boundary = nl + 1;
        }
      } else if (/^\s*$/.test(line)) {
        blankAt = nl + 1;
      } else {
        // Indented by two or more, a line may continue a list item: wait.
        if (blankAt >= 0 && !/^(\t| {2})/.test(line) && !listRE.test(line)) boundary = blankAt;
        blankAt = -1;
        const f = fenceRE.exec(line) ?? mathFenceRE.exec(line);
        if (f) { inFence = f[1]; fenceStart = pos; boundary = pos; }
      }
      pos = nl + 1;
    }
    if (boundary > this.frozen) {
      const tpl = document.createElement("template");
      tpl.innerHTML = render(this.src.slice(this.frozen, boundary));
      this.live.before(tpl.content);
      upgrade(this.root);
      this.frozen = boundary;
      this.liveCode = null;
      this.live.textContent = "";
    }
    const tail = this.src.slice(this.frozen);
    if (inFence && fenceStart === this.frozen && fenceRE.test(tail)) {
      // The open block is a code block: append the new code as text.
      const firstNL = tail.indexOf("\n");
      const body = tail.slice(firstNL + 1);
      if (!this.liveCode) {
        const lang = fenceRE.exec(tail)![2];
        if (lang) preloadHighlight();
        this.live.innerHTML = `<div class="code">${codeBar(lang)}<pre><code class="hljs"></code></pre></div>`; // coloured once closed
        const text = document.createTextNode("");
        this.live.querySelector("code")!.append(text);
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
      upgrade(this.live);
    }
    this.onFlush?.();
  }

  /** Renders the rest of the answer once more, now that it is complete. */
  finish() {
    if (this.scheduled) cancelAnimationFrame(this.scheduled);
    this.scheduled = 0;
    this.liveCode = null;
    this.live.innerHTML = render(this.src.slice(this.frozen));
    upgrade(this.live);
    this.onFlush?.();
  }
}
