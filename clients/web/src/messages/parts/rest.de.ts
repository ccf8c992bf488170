export const rest = {
};
