// German (Deutsch). Same ids as en.ts; tsc refuses a missing one.
import type { Messages } from "../i18n";
import { main } from "./parts/main.de";
import { pages } from "./parts/pages.de";
import { rest } from "./parts/rest.de";

export const de: Record<keyof Messages, string> = { ...main, ...pages, ...rest };
