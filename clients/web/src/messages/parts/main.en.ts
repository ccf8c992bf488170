export const main = {
} as const;
