export const rest = {
} as const;
