// English: the catalogue's source. Every string the app shows is here; ids
// are grouped by the part of the app that shows them. de.ts must have the
// same ids (its type says so).
import { main } from "./parts/main.en";
import { pages } from "./parts/pages.en";
import { rest } from "./parts/rest.en";

export const en = { ...main, ...pages, ...rest };
