// A stacked bar chart in SVG: one bar per day, one colour per series (model).
// A few dozen lines of our own instead of a chart library.
import { h, s } from "./dom";

const palette = ["#3b5bdb", "#e8590c", "#2b8a3e", "#ae3ec9", "#1098ad", "#f08c00", "#c2255c", "#5c940d"];

export interface Series { name: string; values: number[] }

/** days: the x labels (YYYY-MM-DD); series values align with days. title is shown text (the caller's, translated); series names are data (model names). */
export function barChart(title: string, days: string[], series: Series[], fmt: (v: number) => string): HTMLElement {
  const W = 640, H = 200, left = 56, bottom = 22, top = 8;
  const totals = days.map((_, i) => series.reduce((a, sr) => a + sr.values[i], 0));
  const max = Math.max(...totals, 0) || 1;
  const bw = (W - left) / Math.max(days.length, 1);
  const y = (v: number) => top + (H - top - bottom) * (1 - v / max);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title, class: "chart" });
  for (const f of [0, 0.5, 1]) {
    svg.append(s("line", { x1: left, x2: W, y1: y(max * f), y2: y(max * f), class: "grid" }),
      s("text", { x: left - 6, y: y(max * f) + 4, "text-anchor": "end", class: "axis", translate: "no" }, fmt(max * f)));
  }
  days.forEach((d, i) => {
    let acc = 0;
    series.forEach((sr, k) => {
      const v = sr.values[i];
      if (!v) return;
      const rect = s("rect", { x: left + i * bw + 1, width: Math.max(1, bw - 2), y: y(acc + v), height: y(acc) - y(acc + v), fill: palette[k % palette.length] },
        s("title", {}, `${d} · ${sr.name}: ${fmt(v)}`));
      svg.append(rect);
      acc += v;
    });
    if (days.length <= 14 || i % Math.ceil(days.length / 10) === 0) {
      svg.append(s("text", { x: left + i * bw + bw / 2, y: H - 6, "text-anchor": "middle", class: "axis", translate: "no" }, d.slice(5)));
    }
  });
  const legend = h("ul", { class: "legend" }, ...series.map((sr, k) =>
    h("li", { translate: "no" }, h("span", { class: "swatch", style: `background:${palette[k % palette.length]}` }), sr.name)));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title), svg, legend);
}
