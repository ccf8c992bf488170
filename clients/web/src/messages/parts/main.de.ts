export const main = {
};
