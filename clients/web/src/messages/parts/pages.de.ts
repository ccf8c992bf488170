export const pages = {
};
