// drawing.js: colours, writes that skip what is already there, and vectors and numbers painted
// on canvases. A part of the explorer page (state.js lists the parts).

// ---- colour ----

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
const INK = "#1d1d27", MUTED_INK = "#767676", ACCENT = "#2a5d80"; // the stylesheet's, for what canvases paint

// a diverging scale for signed numbers: blue below 0, white at 0, red above, full at ±scale
const BLUE = [33, 102, 172], RED = [178, 24, 43];
function divergingRGB(x, scale) {
  const f = Math.min(Math.abs(x) / (scale || 1), 1), end = x < 0 ? BLUE : RED;
  return end.map((c) => Math.round(255 + f * (c - 255)));
}
const diverging = (x, scale) => `rgb(${divergingRGB(x, scale).join(",")})`;
const largest = (...vectors) => Math.max(1e-12, ...vectors.map((v) => Math.max(...Array.from(v, Math.abs))));

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

// ---- strips and numbers painted over the page ----------------------------------------------
// A vector is shown as a strip of coloured cells, one per number, on a diverging scale. On the
// page a strip is an empty frame that says its numbers to a screen reader; its colours (and the
// worked row's numbers) are painted on one canvas laid over the part of the page that holds the
// frames. At a keystroke dozens of strips and numbers change: as styled boxes and text, the
// browser laid out and rasterised each of them again, most of a keystroke's cost.

function frame(length) {
  const node = el("span", { class: "vec", role: "img" });
  node.style.setProperty("--n", length);
  return node;
}
const vectorText = (name, v) => `${name} = [${Array.from(v, (x) => fmt(x, 2)).join(", ")}]`;

// A canvas over `holder` (a positioned box). Where things lie on it, `measure(at, last)` (with
// `at(node, inset)` a node's box on the canvas, and the last measure), is found at the first
// paint and again when `watched` changes size, which then calls `redraw`; the measure may name
// the canvas's `height`.
function overlay(holder, watched, measure, redraw) {
  const canvas = el("canvas", { class: "paint", "aria-hidden": "true" });
  holder.append(canvas);
  const layer = { canvas, ctx: canvas.getContext("2d"), spots: null, last: null };
  layer.place = () => { // the spots; null while the holder is hidden
    if (layer.spots) return layer.spots;
    const box = holder.getBoundingClientRect(), ratio = window.devicePixelRatio || 1, ctx = layer.ctx;
    if (!box.width) return null;
    const origin = canvas.getBoundingClientRect(); // the holder's top left corner
    const pixel = (x) => Math.round(x * ratio) / ratio; // so that copied text lands on whole pixels, unblurred
    const at = (node, inset = 0) => {
      const r = node.getBoundingClientRect();
      return [r.left - origin.left + inset, r.top - origin.top + inset, r.width - 2 * inset, r.height - 2 * inset].map(pixel);
    };
    const spots = measure(at, layer.last), height = spots.height || box.height;
    Object.assign(canvas.style, { width: `${box.width}px`, height: `${height}px` });
    canvas.width = Math.round(box.width * ratio);
    canvas.height = Math.round(height * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0); // (a new size resets the context)
    ctx.imageSmoothingEnabled = false; // a strip's cells stay sharp when its row of pixels is scaled up
    return (layer.spots = layer.last = spots);
  };
  new ResizeObserver(() => { layer.spots = null; if (state.view) redraw(); }).observe(watched);
  return layer;
}

// the font a node's text is set in, as a canvas takes it (from the longhands: not every browser
// gives the `font` shorthand of a computed style)
function fontOf(node, weight = null) {
  const style = getComputedStyle(node);
  return `${style.fontStyle} ${weight || style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
}

// Strips [values, scale, [x, y, width, height], from, to] on a canvas, the cells outside
// [from, to) faded when given: each becomes a row of pixels, a pixel a number, on a scratch
// canvas (one putImageData for them all), and is then drawn scaled up into its place.
const scratch = el("canvas").getContext("2d");
function paintStrips(ctx, strips) {
  if (!strips.length) return;
  const width = Math.max(...strips.map(([values]) => values.length));
  if (scratch.canvas.width < width) scratch.canvas.width = width;
  if (scratch.canvas.height < strips.length) scratch.canvas.height = strips.length;
  const image = scratch.createImageData(width, strips.length), pixels = image.data;
  strips.forEach(([values, scale, , from = 0, to = values.length], r) => {
    for (let n = 0, at = 4 * r * width; n < values.length; n++, at += 4) {
      const rgb = divergingRGB(values[n], scale), faded = n < from || n >= to;
      for (let c = 0; c < 3; c++) pixels[at + c] = faded ? 255 - 0.25 * (255 - rgb[c]) : rgb[c];
      pixels[at + 3] = 255;
    }
  });
  scratch.putImageData(image, 0, 0);
  strips.forEach(([values, , [x, y, w, h]], r) => ctx.drawImage(scratch.canvas, 0, r, values.length, 1, x, y, w, h));
}

// Text drawn once on a canvas of its own, a box `width` × `height` with the text centred, or
// right-aligned 3px in (the tables' padding), or from the left; then copied wherever it is needed.
// At a keystroke the canvases show hundreds of numbers, and copying pixels is far quicker than
// drawing text.
const textPictures = new Map();
function textPicture(text, ink, font, width, height, align = "center") {
  const key = `${font}|${ink}|${width}|${height}|${align}|${text}`;
  if (!textPictures.has(key)) {
    if (textPictures.size > 5000) textPictures.clear(); // scores take many values: a bounded cache
    const ratio = window.devicePixelRatio || 1;
    const ctx = el("canvas", { width: Math.round(width * ratio), height: Math.round(height * ratio) }).getContext("2d");
    ctx.scale(ratio, ratio);
    Object.assign(ctx, { font, textAlign: align, textBaseline: "middle", fillStyle: ink });
    ctx.fillText(text, { center: width / 2, right: width - 3, left: 0 }[align], height / 2 + 0.5);
    textPictures.set(key, ctx.canvas);
  }
  return textPictures.get(key);
}
