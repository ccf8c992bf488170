// The app's strings: one catalogue per language (messages/en.ts is the
// source, messages/de.ts its German), chosen from the browser's languages or
// the user's choice in Settings. English ships in the first load; another
// language is a chunk fetched before the app draws its first screen.
//
//   t("chat.send")                     → "Send"
//   t("usage.spendDays", { n: 30 })    → "Spend per day (last 30 days)"
//   tp("chat.files", 2)                → "2 files" (chat.files_one / chat.files_other)
//
// Placeholders are {name}; plural forms are ids ending in _one, _other (and
// whatever else Intl.PluralRules names for a language), as i18next does.
import { en } from "./messages/en";

export type Messages = typeof en;
export type MessageId = keyof Messages;
type PluralId = { [K in MessageId]: K extends `${infer B}_other` ? B : never }[MessageId];
type Vars = Record<string, string | number | bigint>;

/** The languages the app speaks, by BCP 47 primary subtag, as each names itself. */
export const languages = { en: "English", de: "Deutsch" } as const;
export type Lang = keyof typeof languages;
const storedKey = "parley.lang";

let table: Record<string, string> = en;
let lang: Lang | "qps" = "en";
let plural = new Intl.PluralRules("en");

/** The language in use: the stored choice if any, else the first of the browser's the app speaks. */
export function chosenLanguage(): Lang | "qps" {
  const stored = localStorage.getItem(storedKey);
  if (stored === "qps" || (stored && stored in languages)) return stored as Lang | "qps";
  for (const l of navigator.languages ?? [navigator.language]) {
    const p = l.toLowerCase().split("-")[0];
    if (p in languages) return p as Lang;
  }
  return "en";
}

/** The stored choice ("" = follow the browser). */
export const storedLanguage = () => localStorage.getItem(storedKey) ?? "";
export function storeLanguage(l: string) {
  if (l) localStorage.setItem(storedKey, l);
  else localStorage.removeItem(storedKey);
}

/**
 * Loads the chosen language's catalogue and marks the document with it; call
 * once before drawing. "qps" is a pseudo-language for tests: every string
 * from the catalogue shows as ⟦…⟧, so text that bypasses it stands out.
 */
export async function loadLanguage(): Promise<void> {
  lang = chosenLanguage();
  if (lang === "de") {
    try {
      table = (await import("./messages/de")).de;
    } catch {
      lang = "en"; // offline before the catalogue was ever fetched: English
    }
  } else if (lang === "qps") table = Object.fromEntries(Object.entries(en).map(([k, v]) => [k, `⟦${v}⟧`]));
  plural = new Intl.PluralRules(lang === "qps" ? "en" : lang);
  document.documentElement.lang = lang === "qps" ? "en" : lang;
}

/** The locale for numbers and dates: the browser's own if it is of the chosen language. */
export function locale(): string {
  const base = lang === "qps" ? "en" : lang;
  return (navigator.languages ?? []).find((l) => l.toLowerCase().split("-")[0] === base) ?? base;
}

const fill = (s: string, vars?: Vars) =>
  vars ? s.replace(/\{(\w+)\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m)) : s;

/** The message for id in the chosen language, placeholders filled. */
export function t(id: MessageId, vars?: Vars): string {
  return fill(table[id] ?? en[id], vars);
}

/** The plural form of id for n; {n} is filled with n in the locale's digits. */
export function tp(id: PluralId, n: number | bigint, vars?: Vars): string {
  const form = `${id}_${plural.select(Number(n))}`;
  const s = table[form] ?? table[`${id}_other`] ?? (en as Record<string, string>)[`${id}_other`];
  return fill(s, { n: Number(n).toLocaleString(locale()), ...vars });
}

/** A number in the chosen locale. */
export const num = (n: number | bigint) => Number(n).toLocaleString(locale());
