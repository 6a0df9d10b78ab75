// paint.js: what both pages draw with (the explorer's parts through drawing.js, and pair.js):
// colours for weights and signed numbers, the ink that reads on them, numbers as text, and
// writes that skip what is already there.

const Paint = (() => {
// viridis, dark purple for 0 to yellow for 1, as 256 ready-made colours
const VIRIDIS_STOPS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"]
  .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
const VIRIDIS = Array.from({ length: 256 }, (_, n) => {
  const x = (n / 255) * (VIRIDIS_STOPS.length - 1), i = Math.min(Math.floor(x), VIRIDIS_STOPS.length - 2), f = x - i;
  return VIRIDIS_STOPS[i].map((c, k) => Math.round(c + f * (VIRIDIS_STOPS[i + 1][k] - c)));
});
const VIRIDIS_CSS = VIRIDIS.map((rgb) => `rgb(${rgb.join(",")})`);
const shade = (w) => Math.round(Math.min(Math.max(w, 0), 1) * 255); // a weight as an index into VIRIDIS
const viridisRGB = (w) => VIRIDIS[shade(w)];
const viridis = (w) => VIRIDIS_CSS[shade(w)];
const inkOn = (w) => (w > 0.6 ? "#111" : "#fff");

// a diverging scale for signed numbers: blue below 0, white at 0, red above, full at ±scale
const BLUE = [33, 102, 172], RED = [178, 24, 43];
function divergingRGB(x, scale) {
  const f = Math.min(Math.abs(x) / (scale || 1), 1), end = x < 0 ? BLUE : RED;
  return end.map((c) => Math.round(255 + f * (c - 255)));
}
const diverging = (x, scale) => `rgb(${divergingRGB(x, scale).join(",")})`;
// many nodes into a parent: append(...nodes) passes each as an argument, which throws past about 125,000
function appendAll(parent, nodes) {
  const fragment = document.createDocumentFragment();
  for (const node of nodes) fragment.appendChild(node);
  parent.appendChild(fragment);
}

// a number as the page writes it: a true minus sign, and infinities as symbols
const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits).replace("-", "−") : x > 0 ? "∞" : "−∞");
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "style") Object.assign(node.style, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
};

// Writes that skip what is already there: a redraw then gives the browser only the cells whose
// text, colour or class really changed to lay out and paint again.
function write(node, text) {
  if (node.textContent === text) return;
  const only = node.firstChild;
  if (only && only.nodeType === Node.TEXT_NODE && !only.nextSibling) only.data = text; // the same text node: no node to add
  else node.textContent = text;
}
function say(node, text) { // what a screen reader says for a node the canvas paints
  if (node.getAttribute("aria-label") !== text) node.setAttribute("aria-label", text);
}
function restyle(node, key, value) {
  if (node[`_${key}`] !== value) node.style[key] = node[`_${key}`] = value;
}
function reclass(node, name) {
  if (node.className !== name) node.className = name;
}
function hide(node, hidden) {
  if (node.hidden !== hidden) node.hidden = hidden;
}
function setData(node, key, value) {
  if (node.dataset[key] !== value) node.dataset[key] = value;
}

// black or white, whichever reads better on the colour `rgb` (WCAG's relative luminance)
function readableOn(rgb) {
  const [r, g, b] = rgb.map((c) => { const x = c / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? "#000" : "#fff"; // pure: one of them always reaches 4.5:1
}

return { appendAll, diverging, divergingRGB, el, fmt, hide, inkOn, readableOn, reclass, restyle, say, setData, viridis,
  viridisRGB, write };
})();
