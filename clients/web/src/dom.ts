// DOM helpers shared by the app's pages.
import { locale } from "./i18n";
export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** h("a", {href, onclick}, ...children): an element with attributes, listeners and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, unknown> = {}, ...kids: (Node | string | null | false | undefined)[]) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v as EventListener);
    else if (v !== undefined && v !== false) el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of kids) if (c) el.append(c);
  return el;
}

/** An SVG element with attributes and children. */
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, ...kids: (Node | string)[]) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...kids);
  return el;
}

/** A date and time for people, in the app's language (the browser's own variant of it). */
export const when = (ms: number) => new Date(ms).toLocaleString(locale(), { dateStyle: "medium", timeStyle: "short" });

/** when() as a <time> element: data, not the app's text (translate="no"). */
export const timeEl = (ms: number) => h("time", { datetime: new Date(ms).toISOString(), translate: "no" }, when(ms));

/** Nanodollars as dollars: $1.25, $0.0031. */
export function usd(nanos: bigint | number): string {
  const d = Number(nanos) / 1e9;
  const abs = Math.abs(d);
  const digits = abs === 0 ? 2 : abs < 0.01 ? 4 : 2;
  return (d < 0 ? "−$" : "$") + abs.toFixed(digits);
}
