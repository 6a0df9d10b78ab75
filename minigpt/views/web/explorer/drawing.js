// drawing.js: vectors and numbers painted on canvases, the readout and the switches, and (from
// paint.js, which the two-run page shares) colours and writes that skip what is already there. A
// part of the explorer page (state.js lists the parts).

const Drawing = (() => {
const { config, isOn, label, setPart, state } = State;
const { appendAll, diverging, divergingRGB, el, fmt, hide, inkOn, readableOn, reclass, restyle, say, setData, viridis,
  viridisRGB, write } = Paint; // offered again below, beside what the explorer alone draws

const INK = "#1d1d27", MUTED_INK = "#767676", ACCENT = "#2a5d80"; // the stylesheet's, for what canvases paint
// the root mean square rmsnorm divides by (the recipe's eps inside the root, as model.py has it)
const rms = (v) => Math.sqrt(Array.from(v).reduce((sum, x) => sum + x * x, 0) / v.length + config.norm_eps);
const largest = (...vectors) => Math.max(1e-12, ...vectors.map((v) => MiniGPTModel.maxOf(Array.from(v, Math.abs))));

// ---- strips and numbers painted over the page ----------------------------------------------
// A vector is shown as a strip of coloured cells, one per number, on a diverging scale. On the
// page a strip is an empty frame that says its numbers to a screen reader; its colours (and the
// worked row's numbers) are painted on one canvas laid over the part of the page that holds the
// frames. At a keystroke dozens of strips and numbers change: as styled boxes and text, the
// browser laid out and rasterised each of them again, most of a keystroke's cost.

function frame(length) {
  // labelled from the start: its numbers are said once they are painted, which may be a frame later
  const node = el("span", { class: "vec", role: "img", "aria-label": `${length} numbers` });
  node.style.setProperty("--n", length);
  return node;
}
function vectorText(name, v, index = String) { // "q4[32–47] = [...]" for a slice, "lm_head: “a” 2.88, ..." for tokens
  const numbers = (list) => list.join(", ");
  if (index.from !== undefined) return `${name}[${index.from}–${index.from + v.length - 1}] = [${numbers(Array.from(v, (x) => fmt(x, 2)))}]`;
  if (index !== String) return `${name}: ${numbers(Array.from(v, (x, n) => `${index(n)} ${fmt(x, 2)}`))}`;
  return `${name} = [${numbers(Array.from(v, (x) => fmt(x, 2)))}]`;
}

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

// Paint strips on an overlay whose measure names its frames: [values, scale, frame's name, faded from, to]
function paintNamed(picture, strips) {
  const spots = picture.place(); // null while the part is hidden
  if (!spots) return;
  picture.ctx.clearRect(0, 0, picture.canvas.width, picture.canvas.height);
  paintStrips(picture.ctx, strips.map(([values, scale, name, from, to]) => [values, scale, spots[name], from, to]));
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

// ---- a strip's numbers, to read ------------------------------------------------------------
// A strip is colour; to check a product by hand a learner needs its numbers. Hovering a strip,
// tapping it or moving the keyboard focus to it shows them all in one box under it, the number
// under the pointer (or picked with ← and →) first. The box is one node for the whole page.

const readout = { node: null, frame: null, pick: 0, items: [] };

// a strip that can be read: its name and numbers, for the box and for a screen reader, and how
// number n was made (`explain(n)`, a line under it: "= q[n] × k[n]"), when it is a product. Every
// panel names a vector alike: `index(n)` is how number n is called, its place in the whole vector
// where the strip is a head's slice of it (q4[33], not q4[1]), or the character a logit is for
const wholeIndex = (from) => Object.assign((n) => String(from + n), { from });
const tokenIndex = (t) => `“${label(t)}”`;
function readable(node, name, values, explain = null, index = String) {
  node._read = { name, values, explain, index };
  say(node, vectorText(name, values, index));
  if (node.tabIndex !== 0 && !node._roving) node.tabIndex = 0;
  if (readout.frame === node) showReadout(node, readout.pick); // it changed while shown
}

function buildReadout() {
  readout.node = el("div", { id: "readout", role: "status", hidden: "" });
  document.body.append(readout.node);
  const frameOf = (event) => (event.target.closest ? event.target.closest(".vec") : null);
  const pickAt = (node, x) => {
    const r = node.getBoundingClientRect(), n = node._read.values.length;
    return Math.min(n - 1, Math.max(0, Math.floor(((x - r.left) / r.width) * n)));
  };
  document.addEventListener("mousemove", (event) => {
    const node = frameOf(event);
    if (node && node._read) showReadout(node, pickAt(node, event.clientX));
    else if (readout.frame && readout.frame !== document.activeElement) hideReadout();
  });
  // a tap or a click focuses the strip too: the number under the finger, not the first, is the one to read
  document.addEventListener("pointerdown", (event) => {
    const node = frameOf(event);
    readout.pointed = node && node._read ? { node, pick: pickAt(node, event.clientX) } : null;
    if (readout.pointed) showReadout(node, readout.pointed.pick);
  });
  document.addEventListener("focusin", (event) => {
    const node = frameOf(event), pointed = readout.pointed;
    readout.pointed = null;
    if (node && node._read) showReadout(node, pointed && pointed.node === node ? pointed.pick : 0);
  });
  document.addEventListener("focusout", (event) => { if (frameOf(event) === readout.frame) hideReadout(); });
  document.addEventListener("keydown", (event) => {
    if (!readout.frame || document.activeElement !== readout.frame) return;
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key], move = { ArrowDown: 1, ArrowUp: -1 }[event.key];
    if (step) { event.preventDefault(); showReadout(readout.frame, readout.pick + step); }
    if (move && readout.frame._roving) { event.preventDefault(); rove(readout.frame, move); }
    if (event.key === "Escape") hideReadout();
  });
  window.addEventListener("scroll", () => { if (readout.frame) placeReadout(); }, { passive: true });
}

const READOUT_SPAN = 16; // the most numbers the box lists at once: a small box, over as few rows as can be

// Strips in a long list (`roving`, an array of frames) are one stop for the Tab key: ↑ and ↓ move
// the focus along the list, and the one last focused is where Tab comes back to.
function roving(frames) {
  frames.forEach((node, n) => { node._roving = frames; node.tabIndex = n === 0 ? 0 : -1; });
}
function rove(node, move) {
  const list = node._roving, seen = (other) => other.offsetParent !== null && other.style.visibility !== "hidden";
  let at = list.indexOf(node) + move;
  while (list[at] && !seen(list[at])) at += move; // past what is hidden (what changed, with every part on)
  const next = list[at];
  if (!next) return;
  list.forEach((other) => { other.tabIndex = other === next ? 0 : -1; });
  next.focus();
}

function showReadout(node, pick) {
  const { name, values } = node._read, n = values.length;
  pick = (pick + n) % n;
  const start = pick - (pick % READOUT_SPAN), end = Math.min(n, start + READOUT_SPAN);
  if (readout.frame !== node || readout.start !== start || readout.items.length !== end - start) {
    readout.items = Array.from({ length: end - start }, () => el("span"));
    readout.node.replaceChildren(el("strong"), el("div", { class: "explain" }), el("div", { class: "numbers" }, ...readout.items));
  }
  readout.items.forEach((item, k) => {
    write(item, `${node._read.index(start + k)}: ${fmt(values[start + k], 4)}`);
    item.classList.toggle("picked", start + k === pick);
  });
  const which = n > READOUT_SPAN ? `numbers ${start}–${end - 1} of ${n}` : `${n} numbers`;
  write(readout.node.firstChild, `${name}[${node._read.index(pick)}] = ${fmt(values[pick], 4)}  (${which}; ← →${node._roving ? ", ↑ ↓" : ""} to move)`);
  write(readout.node.children[1], node._read.explain ? node._read.explain(pick) : "");
  Object.assign(readout, { frame: node, pick, start });
  hide(readout.node, false);
  placeReadout();
}

// Beside the strip where there is room, so that the box covers none of the rows around it (the rows of
// a matrix, the lines of a sum it explains); else below it, or above when below would leave the screen.
const READOUT_BESIDE = 320; // the narrowest box worth putting beside a strip
function placeReadout() {
  const r = readout.frame.getBoundingClientRect(), box = readout.node;
  if (r.bottom < 0 || r.top > innerHeight) return hideReadout();
  const room = innerWidth - r.right - 12;
  if (room >= READOUT_BESIDE) {
    box.style.width = `${Math.min(520, room)}px`;
    box.style.left = `${r.right + 8}px`;
    box.style.top = `${Math.max(4, Math.min(r.top - 4, innerHeight - box.offsetHeight - 4))}px`;
    return;
  }
  const width = Math.min(520, innerWidth - 8);
  box.style.width = `${width}px`;
  box.style.left = `${Math.max(4, Math.min(r.left, innerWidth - width - 4))}px`;
  const below = r.bottom + 6, height = box.offsetHeight;
  box.style.top = `${below + height > innerHeight && r.top - height - 6 > 0 ? r.top - height - 6 : below}px`;
}

function hideReadout() {
  readout.frame = null;
  hide(readout.node, true);
}

// "= Σⱼ a[j]·W_Q[n, j]: a[12]·W_Q[n, 12] = 0.8100 × 0.5500 = 0.4455, ... (the largest of 64 terms) = q[n]"
function projectionSum(W, wName, input, inName, n, total, rowName = String) {
  const terms = Array.from(input, (x, k) => [x * W.data[n * W.cols + k], x, W.data[n * W.cols + k], k])
    .sort((u, v) => Math.abs(v[0]) - Math.abs(u[0])).slice(0, 3);
  return `= Σⱼ ${inName}[j]·${wName}[${rowName(n)}, j] over ${input.length} terms; the largest: ` +
    terms.map(([t, x, w, k]) => `${inName}[${k}]·${wName}[${rowName(n)}, ${k}] = ${fmt(x, 4)} × ${fmt(w, 4)} = ${fmt(t, 4)}`).join(", ") +
    `; all of them add up to ${fmt(total, 4)}`;
}

// A checkbox that switches a part on and off (State.setPart); every switch of the same part (the
// grid's and the ablation table's) follows it when marked.
const switches = [];
function partSwitch(kind, l, h, text) {
  const name = kind === "head" ? `layer ${l} head ${h}` : `layer ${l} ${kind === "mlp" ? "MLP" : "attention"}`;
  const box = el("input", { type: "checkbox", class: "part-switch", "data-part": `${kind},${l},${h}`, "aria-label": `${name} on` });
  box.checked = true;
  box.addEventListener("change", () => setPart(kind, l, h, box.checked));
  switches.push({ box, kind, l, h, name });
  return el("label", { class: "switch", title: `switch ${name} off and on` }, box, text);
}

// every switch as the state has its part; the switches of a table about to be rebuilt are forgotten
function markPartSwitches() {
  for (const { box, kind, l, h, name } of switches) {
    box.checked = isOn(kind, l, h);
    box.setAttribute("aria-label", `${name}: ${box.checked ? "on" : "off"}`); // what a screen reader says follows the box
  }
}
function forgetSwitchesIn(node) {
  for (let n = switches.length - 1; n >= 0; n--) if (node.contains(switches[n].box)) switches.splice(n, 1);
}

return {
  ACCENT, INK, MUTED_INK, appendAll, buildReadout, diverging, divergingRGB, el, fmt, fontOf, forgetSwitchesIn,
  frame, hide, inkOn, largest, markPartSwitches, overlay, paintNamed, paintStrips, partSwitch, projectionSum,
  readable, readableOn, reclass, restyle, rms, roving, say, setData, textPicture, tokenIndex, viridis, viridisRGB, wholeIndex,
  write
};
})();
