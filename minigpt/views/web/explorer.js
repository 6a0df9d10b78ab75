// explorer.js: the page around model.js. It reads what the learner types, runs the model on
// it at every keystroke, and draws what the model did: every head's attention, one head
// large, one row of it worked out from q, k and v, where q, k and v come from, the
// predictions under live sampling filters, and what each head tends to do.
//
// What never changes (the tables, the strips, the head descriptions, the model card) is
// built once, at the model's largest size; a redraw only writes numbers and colours into
// it and hides what the current name does not use. So focus and scroll survive a redraw.
"use strict";

(() => {
  const DATA = JSON.parse(document.getElementById("minigpt-data").textContent);
  const finalModel = MiniGPTModel.load(DATA); // the checkpoint's weights, exact
  let model = finalModel; // the weights the page runs: the checkpoint's, or a training snapshot's
  const config = DATA.config.model;
  const vocab = DATA.vocab; // characters in id order; the boundary token is id vocab.length
  const BOS = vocab.length, V = vocab.length + 1, N = config.block_size;
  const D = config.n_embd / config.n_head; // the head size, d
  const ids = new Map(vocab.map((ch, i) => [ch, i]));
  const trainingNames = DATA.membership.kind === "exact" ? new Set(DATA.membership.names) : null;
  const bloomBits = DATA.membership.kind === "bloom" ? Uint8Array.from(atob(DATA.membership.bits), (c) => c.charCodeAt(0)) : null;

  // what is selected: a head, a row of it (the query position; null follows the last), a cell
  // of that row (the key position), whether the cell's details are open, and what the matrix shows
  const state = { layer: 0, head: 0, row: null, col: null, details: false, show: "weights", view: null,
                  off: { heads: [], attention: [], mlp: [], mode: "zero" }, // the parts switched off
                  snapshot: null }; // the training snapshot shown (an index), or null for the checkpoint
  const $ = (id) => document.getElementById(id);

  // ---- reading the text ----------------------------------------------------------------

  // What the model reads for `text`: the boundary token, then each known character, at most
  // block_size positions in all. Unknown characters are skipped and longer text is cut.
  function readText(text) {
    const chars = [], kept = [], skipped = new Set();
    let cut = 0;
    for (const ch of text) {
      const known = ids.has(ch), fits = known && kept.length < N - 1;
      if (!known) skipped.add(ch);
      if (fits) kept.push(ch);
      else if (known) cut += 1;
      chars.push({ ch, known, cut: known && !fits });
    }
    return { chars, kept, skipped: [...skipped], cut, tokens: [BOS, ...kept.map((ch) => ids.get(ch))] };
  }

  const label = (token) => (token === BOS ? "·" : vocab[token]); // the boundary token: data.py's BOUNDARY

  // The model run on `text`. With `reuse` (the page's own redraws), the positions the last such
  // run shares with this one (same weights, same parts off, the same tokens up to there) are not
  // computed again (model.js's `known`), so typing at the end of a name runs one position.
  let lastPass = null;
  function analyse(text, off = switchedOff(), reuse = false) {
    const read = readText(text), parts = JSON.stringify(off && [off.heads, off.attention, off.mlp]);
    let shared = 0;
    if (reuse && lastPass && lastPass.model === model && lastPass.parts === parts && lastPass.means === (off && off.means)) {
      while (shared < read.tokens.length && lastPass.tokens[shared] === read.tokens[shared]) shared++;
    }
    const steps = MiniGPTModel.forward(model, read.tokens, off, null, shared ? lastPass.steps.slice(0, shared) : []);
    if (reuse) lastPass = { model, parts, means: off && off.means, tokens: read.tokens, steps };
    return { ...read, text, steps };
  }

  // what model.js's forward needs to switch the chosen parts off; null when every part is on
  function switchedOff(parts = state.off) {
    const count = parts.heads.length + parts.attention.length + parts.mlp.length;
    if (!count) return null;
    return { heads: parts.heads, attention: parts.attention, mlp: parts.mlp,
             means: parts.mode === "mean" && DATA.ablation ? meansNow() : null };
  }

  const isOn = (kind, l, h) => (kind === "head" ? !state.off.heads.some(([a, b]) => a === l && b === h) : !state.off[kind].includes(l));

  function setPart(kind, l, h, on) {
    const list = kind === "head" ? state.off.heads : state.off[kind];
    const at = kind === "head" ? list.findIndex(([a, b]) => a === l && b === h) : list.indexOf(l);
    if (on && at >= 0) list.splice(at, 1);
    if (!on && at < 0) list.push(kind === "head" ? [l, h] : l);
    render();
  }

  // attention[l][h][i][j]: how much position i attends to position j (0 for the future)
  function attentionOf(view) {
    const T = view.tokens.length;
    return Array.from({ length: config.n_layer }, (_, l) =>
      Array.from({ length: config.n_head }, (_, h) =>
        view.steps.map((s) => Array.from({ length: T }, (_, j) => (j < s.layers[l].weights[h].length ? s.layers[l].weights[h][j] : 0)))
      )
    );
  }

  // the selected row: the pinned position, or the last one the model read
  const rowOf = (view) => (state.row !== null && state.row < view.tokens.length ? state.row : view.tokens.length - 1);
  // the selected cell of that row: the chosen key position, or the one with the most weight
  function colOf(view) {
    const i = rowOf(view);
    if (state.col !== null && state.col <= i) return state.col;
    const w = view.steps[i].layers[state.layer].weights[state.head];
    return w.indexOf(Math.max(...w));
  }

  // ---- colour ----------------------------------------------------------------------------

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

  // ---- the text box ----------------------------------------------------------------------

  // The characters read, as tokens: spans made once (as many as a pasted paragraph shows) and
  // rewritten only where the text changed, so a typed character changes one span.
  const reading = { tokens: [], more: null };
  function buildInput() {
    const shown = 4 * N; // a pasted paragraph is not drawn whole
    reading.tokens = Array.from({ length: shown }, () => el("span", { hidden: "" }));
    reading.more = el("span", { class: "muted", hidden: "" });
    $("read").append(el("span", { class: "token bos", title: "the boundary token: every name starts after it" }, "·"),
      ...reading.tokens, reading.more);
  }

  function drawInput(view) {
    reading.tokens.forEach((node, k) => {
      const c = view.chars[k];
      hide(node, !c);
      if (!c) return;
      write(node, c.ch === " " ? "␣" : c.ch);
      reclass(node, `token ${c.known ? (c.cut ? "cut" : "") : "unknown"}`);
      const title = c.known ? (c.cut ? "cut: past the block size" : "read by the model") : "not in the vocabulary: skipped";
      if (node.title !== title) node.title = title;
    });
    const more = view.chars.length - reading.tokens.length;
    hide(reading.more, more <= 0);
    if (more > 0) write(reading.more, ` … and ${more} more`);
    const notes = [];
    if (view.skipped.length) {
      notes.push(`Skipped ${view.skipped.map((c) => `“${c}”`).join(", ")}: not in the model's vocabulary (${vocab.join("")}).`);
      const lower = view.text.toLowerCase(); // as data.py's Tokenizer.check suggests
      if (lower !== view.text && [...lower].every((ch) => ids.has(ch))) notes.push(`The vocabulary is lowercase: try “${lower}”.`);
    }
    if (view.cut) {
      notes.push(`Cut ${view.cut} character${view.cut > 1 ? "s" : ""}: the model reads at most ${N - 1} after the boundary token.`);
    }
    write($("notes"), notes.join(" "));
  }

  // ---- every head at once: one canvas over the grid, a pixel per cell scaled up -----------------
  // The buttons hold empty squares (faces) and the one canvas paints every head's picture over
  // them: one picture for the browser to composite at each keystroke, not sixteen.

  const thumbs = [];
  const gridPicture = { canvas: null, ctx: null, scratch: null, image: null, faces: [] };

  function buildGrid() {
    const grid = $("grid");
    grid.style.gridTemplateColumns = `auto repeat(${config.n_head}, minmax(0, 1fr))`;
    grid.append(el("div"), ...Array.from({ length: config.n_head }, (_, h) => el("div", { class: "axis" }, `head ${h}`)));
    for (let l = 0; l < config.n_layer; l++) {
      // the layer's label, with a switch for its whole attention and one for its MLP
      grid.append(el("div", { class: "axis layer" }, `layer ${l}`, partSwitch("attention", l, null, "attn"), partSwitch("mlp", l, null, "MLP")));
      thumbs.push([]);
      for (let h = 0; h < config.n_head; h++) {
        const role = headLabel(l, h);
        const face = el("span", { class: "face" });
        const button = el("button", { class: "thumb", "data-layer": l, "data-head": h, "aria-pressed": "false",
          "aria-label": `layer ${l}, head ${h}${role ? `: ${role}` : ""}`, title: `layer ${l}, head ${h}${role ? `: ${role}` : ""}`,
          onclick: () => selectHead(l, h) }, face);
        thumbs[l].push({ button, face });
        grid.append(el("div", { class: "thumb-cell" }, button, partSwitch("head", l, h, "on")));
      }
    }
    gridPicture.canvas = el("canvas", { id: "grid-canvas", "aria-hidden": "true" });
    gridPicture.ctx = gridPicture.canvas.getContext("2d");
    gridPicture.scratch = el("canvas").getContext("2d"); // one head's picture, a pixel a cell, before scaling
    grid.append(gridPicture.canvas);
    // where the faces are: measured when the grid changes size, not at every keystroke
    new ResizeObserver(() => { placeGridPicture(); drawGrid(); }).observe(grid);
    grid.addEventListener("keydown", (event) => { // arrow keys move between heads
      const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[event.key];
      const at = event.target.closest("button.thumb");
      if (!move || !at) return;
      event.preventDefault();
      const l = clamp(+at.dataset.layer + move[0], 0, config.n_layer - 1), h = clamp(+at.dataset.head + move[1], 0, config.n_head - 1);
      selectHead(l, h);
      thumbs[l][h].button.focus();
    });
  }

  const clamp = (x, low, high) => Math.min(Math.max(x, low), high);

  // A checkbox that switches a part on and off; every switch of the same part (the grid's and the
  // ablation table's) follows it.
  const switches = [];
  function partSwitch(kind, l, h, text) {
    const name = kind === "head" ? `layer ${l} head ${h}` : `layer ${l} ${kind === "mlp" ? "MLP" : "attention"}`;
    const box = el("input", { type: "checkbox", class: "part-switch", "data-part": `${kind},${l},${h}`, "aria-label": `${name} on` });
    box.checked = true;
    box.addEventListener("change", () => setPart(kind, l, h, box.checked));
    switches.push({ box, kind, l, h });
    return el("label", { class: "switch", title: `switch ${name} off and on` }, box, text);
  }

  function markSwitches() {
    for (const { box, kind, l, h } of switches) box.checked = isOn(kind, l, h);
    thumbs.forEach((row, l) => row.forEach(({ button }, h) => button.classList.toggle("off", !isOn("head", l, h) || !isOn("attention", l))));
    const off = state.off.heads.length + state.off.attention.length + state.off.mlp.length;
    $("parts-off").textContent = off ? `${off} part${off > 1 ? "s" : ""} switched off (${state.off.mode === "mean" ? "set to their mean output" : "zeroed"}).` : "";
    hide($("all-on"), !off);
  }

  function placeGridPicture() {
    const grid = $("grid"), canvas = gridPicture.canvas, ratio = window.devicePixelRatio || 1;
    const width = grid.clientWidth, height = grid.clientHeight;
    Object.assign(canvas.style, { width: `${width}px`, height: `${height}px` });
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    gridPicture.faces = thumbs.map((row) => row.map(({ face }) => [face.offsetLeft, face.offsetTop, face.offsetWidth, face.offsetHeight]
      .map((x) => x * ratio)));
  }

  function drawGrid() {
    if (!state.view || !gridPicture.faces.length) return;
    const steps = state.view.steps, T = steps.length, FUTURE = [241, 241, 244];
    const { ctx, scratch } = gridPicture;
    if (!gridPicture.image || gridPicture.image.width !== T) { // a new length: a new image, all of it opaque
      scratch.canvas.width = scratch.canvas.height = T;
      gridPicture.image = scratch.createImageData(T, T);
      gridPicture.image.data.fill(255);
    }
    const pixels = gridPicture.image.data;
    ctx.clearRect(0, 0, ctx.canvas.width, ctx.canvas.height);
    ctx.imageSmoothingEnabled = false;
    thumbs.forEach((row, l) => row.forEach((thumb, h) => {
      for (let i = 0; i < T; i++) {
        const weights = steps[i].layers[l].weights[h];
        for (let j = 0, at = 4 * i * T; j < T; j++, at += 4) {
          const rgb = j > i ? FUTURE : viridisRGB(weights[j]);
          pixels[at] = rgb[0]; pixels[at + 1] = rgb[1]; pixels[at + 2] = rgb[2];
        }
      }
      scratch.putImageData(gridPicture.image, 0, 0);
      const [x, y, w, hh] = gridPicture.faces[l][h];
      ctx.globalAlpha = thumb.button.classList.contains("off") ? 0.25 : 1; // a head switched off, faded
      ctx.drawImage(scratch.canvas, 0, 0, T, T, x, y, w, hh);
    }));
    ctx.globalAlpha = 1;
  }

  function markSelectedHead() {
    thumbs.forEach((row, l) => row.forEach(({ button }, h) => {
      const on = l === state.layer && h === state.head;
      button.classList.toggle("selected", on);
      button.setAttribute("aria-pressed", String(on));
    }));
    headCards.forEach((card) => card.classList.toggle("selected", +card.dataset.layer === state.layer && +card.dataset.head === state.head));
    const role = headLabel(state.layer, state.head);
    $("matrix-title").textContent = `Layer ${state.layer}, head ${state.head}`;
    $("head-label").textContent = role ? `Over ${DATA.roles.names}: ${role}.` : "";
  }

  // ---- one head, large: a grid of the largest size, cut to the name by hiding -------------
  // Cells are placed at fixed spots with fixed sizes (CELL_W × CELL_H), so showing or hiding one
  // makes the browser lay out that cell alone, not a whole table.
  // The cells' numbers and colours are painted on one canvas under them (text laid out in 256 boxes
  // at every keystroke was most of the browser's work); the cells themselves stay, empty and
  // transparent, for the keyboard, the mouse and screen readers (each says its number in aria-label).
  const matrix = { cols: [], rows: [], heads: [], cells: [], canvas: null, ctx: null, painted: [] };
  const CELL_W = 27, CELL_H = 21, HEAD_W = 44;
  const CELL_FONT = "10.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
  const place = (node, x, y) => Object.assign(node.style, { left: `${x}px`, top: `${y}px` });

  function buildMatrix() {
    const grid = $("big-matrix");
    document.documentElement.style.setProperty("--positions", N);
    const ratio = window.devicePixelRatio || 1, width = HEAD_W + N * CELL_W, height = (N + 1) * CELL_H;
    matrix.canvas = el("canvas", { class: "paint", width: Math.round(width * ratio), height: Math.round(height * ratio), "aria-hidden": "true" });
    Object.assign(matrix.canvas.style, { width: `${width}px`, height: `${height}px` });
    matrix.ctx = matrix.canvas.getContext("2d");
    matrix.ctx.scale(ratio, ratio);
    grid.append(matrix.canvas);
    const header = el("div", { role: "row" }, el("div", { class: "corner", role: "columnheader" }, "reads ↓", el("br"), "attends →"));
    for (let j = 0; j < N; j++) {
      const head = el("div", { class: "col-head", role: "columnheader" });
      place(head, HEAD_W + j * CELL_W, 0);
      matrix.cols.push(head);
      header.append(head);
    }
    grid.append(header);
    for (let i = 0; i < N; i++) {
      const head = el("div", { class: "row-head", role: "rowheader", title: "work out this row" });
      place(head, 0, (i + 1) * CELL_H);
      const row = el("div", { role: "row", "data-i": i }, head);
      const cells = [];
      matrix.painted.push(new Array(N).fill(""));
      for (let j = 0; j < N; j++) {
        const cell = el("div", { class: "cell", role: "gridcell", tabindex: "-1", "data-i": i, "data-j": j });
        place(cell, HEAD_W + j * CELL_W, (i + 1) * CELL_H);
        cells.push(cell);
        row.append(cell);
      }
      matrix.rows.push(row);
      matrix.heads.push(head);
      matrix.cells.push(cells);
      grid.append(row);
    }
    grid.addEventListener("click", (event) => {
      const cell = event.target.closest(".cell"), head = event.target.closest(".row-head");
      if (cell && +cell.dataset.j <= +cell.dataset.i) clickCell(+cell.dataset.i, +cell.dataset.j);
      else if (head) selectCell(matrix.heads.indexOf(head), null);
    });
    grid.addEventListener("keydown", cellKeys);
    grid.addEventListener("mouseover", (event) => { // a cell of the worked row lights its line of the arithmetic
      const cell = event.target.closest(".cell");
      highlightLine(cell && +cell.dataset.i === rowOf(state.view) && +cell.dataset.j <= +cell.dataset.i ? +cell.dataset.j : null);
    });
    grid.addEventListener("mouseleave", () => highlightLine(null));
  }

  function drawMatrix() {
    const view = state.view, T = view.tokens.length, { layer: l, head: h } = state;
    const scores = state.show === "scores", labels = view.tokens.map(label);
    const worked = rowOf(view), chosen = colOf(view);
    let scale = 1e-12;
    if (scores) view.steps.forEach((s) => s.layers[l].scores[h].forEach((x) => { scale = Math.max(scale, Math.abs(x)); }));
    const grid = $("big-matrix");
    if (grid.dataset.positions !== String(T)) {
      grid.dataset.positions = T;
      Object.assign(grid.style, { width: `${HEAD_W + T * CELL_W}px`, height: `${(T + 1) * CELL_H}px` });
    }
    for (let j = 0; j < N; j++) {
      hide(matrix.cols[j], j >= T);
      if (j < T) write(matrix.cols[j], labels[j]);
    }
    for (let i = 0; i < N; i++) {
      const tr = matrix.rows[i];
      hide(tr, i >= T);
      if (i >= T) continue;
      tr.classList.toggle("worked", i === worked);
      write(matrix.heads[i], labels[i]);
      const at = view.steps[i].layers[l];
      matrix.cells[i].forEach((td, j) => {
        hide(td, j >= T);
        if (j >= T) return;
        const future = j > i;
        const value = future ? (scores ? -Infinity : 0) : scores ? at.scores[h][j] : at.weights[h][j];
        reclass(td, future ? "cell future" : i === worked && j === chosen ? "cell chosen" : "cell");
        setData(td, "value", String(value));
        const text = future ? (scores ? "−∞" : "masked") : scores ? fmt(value, 1) : shortWeight(value);
        say(td, text);
        paintCell(i, j, future ? "#f1f1f4" : scores ? diverging(value, scale) : viridis(value),
          future ? "#767676" : scores ? (Math.abs(value) / scale > 0.6 ? "#fff" : "#111") : inkOn(value), future && !scores ? "" : text);
        const tab = i === worked && j === chosen ? 0 : -1; // one stop for Tab: the arrows move within
        if (td.tabIndex !== tab) td.tabIndex = tab;
      });
    }
    for (let i = 0; i < N; i++) for (let j = 0; j < N; j++) if (i >= T || j >= T) paintCell(i, j, null); // past the name
    const legend = scores ? `score ${fmt(-scale, 1)}|diverging|${fmt(scale, 1)}` : "weight 0|viridis|1";
    if ($("matrix-scale").dataset.legend !== legend) { // the colour scale's ends, when they change
      const [low, ramp, high] = legend.split("|");
      $("matrix-scale").replaceChildren(el("span", {}, low), el("span", { class: `ramp ${ramp}` }), el("span", {}, high));
      $("matrix-scale").dataset.legend = legend;
    }
    drawCellInfo();
  }

  // one cell on the matrix's canvas, when it changed: its background, and its text in `ink`
  // (no background: the cell is cleared, past the end of the name)
  function paintCell(i, j, background, ink = "", text = "") {
    const key = background ? `${background}|${ink}|${text}` : "";
    if (matrix.painted[i][j] === key) return;
    matrix.painted[i][j] = key;
    const ctx = matrix.ctx, x = HEAD_W + j * CELL_W, y = (i + 1) * CELL_H;
    if (!background) return ctx.clearRect(x, y, CELL_W, CELL_H);
    ctx.fillStyle = background; // opaque: it covers whatever the cell showed before
    ctx.fillRect(x + 1, y + 1, CELL_W - 2, CELL_H - 2); // the 1px around it is the gap between cells
    if (text) ctx.drawImage(textPicture(text, ink, CELL_FONT, CELL_W, CELL_H), x, y, CELL_W, CELL_H);
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

  // a weight in the room of a cell: ".43", and "1" for a whole row's weight
  const shortWeight = (w) => (w >= 0.995 ? "1" : w.toFixed(2).slice(1));

  const activeCell = () => matrix.cells[rowOf(state.view)][colOf(state.view)];

  function cellKeys(event) {
    const view = state.view, T = view.tokens.length;
    let i = rowOf(view), j = colOf(view);
    switch (event.key) {
      case "ArrowUp": i = Math.max(0, i - 1); j = Math.min(j, i); break;
      case "ArrowDown": i = Math.min(T - 1, i + 1); break;
      case "ArrowLeft": j = Math.max(0, j - 1); break;
      case "ArrowRight": j = Math.min(i, j + 1); break;
      case "Home": j = 0; break;
      case "End": j = i; break;
      case "Enter": case " ": event.preventDefault(); return clickCell(i, j);
      case "Escape": state.details = false; return drawCellInfo();
      default: return;
    }
    event.preventDefault();
    selectCell(i, j);
    activeCell().focus();
  }

  // A click (or a tap) on a cell works out its row and opens its details; a second closes them.
  function clickCell(i, j) {
    const again = i === rowOf(state.view) && j === colOf(state.view);
    state.details = again ? !state.details : true;
    selectCell(i, j);
  }

  function drawCellInfo() {
    const box = $("cell-info"), view = state.view;
    hide(box, !state.details);
    if (!state.details) return;
    const i = rowOf(view), j = colOf(view), at = view.steps[i].layers[state.layer], h = state.head;
    const scores = at.scores[h], max = Math.max(...scores), total = scores.reduce((a, s) => a + Math.exp(s - max), 0);
    const labels = view.tokens.map(label);
    box.textContent = `Position ${i} “${labels[i]}” attends to position ${j} “${labels[j]}”: ` +
      `q·k${j} = ${fmt(scores[j] * Math.sqrt(D))}, ÷ √${D} = ${fmt(scores[j])}, + mask 0, ` +
      `e^(${fmt(scores[j])} − ${fmt(max)}) = ${fmt(Math.exp(scores[j] - max))}, ÷ ${fmt(total)} = weight ${fmt(at.weights[h][j], 4)}.`;
  }

  // ---- one row worked out: q against every k, the scores, the mask, softmax, and × V --------
  // Every number and strip of it changes when a character is typed (the new character becomes the
  // row worked out), so they are painted on a canvas over the table. The table stays for its
  // structure: its cells are empty, say their numbers in aria-label, and carry the hover and the
  // click. Its lines have one height, so line j lies j line heights below line 0, and the sums'
  // row below the last line shown: measured once, not at each keystroke.

  const math = { lines: [], picture: null };

  function buildMath() {
    const table = $("math-table");
    // fixed column widths: a new number in a cell does not make the browser lay out the whole table again
    document.documentElement.style.setProperty("--strip", `${D * Math.max(3, 56 / D) + 8}px`);
    table.append(el("thead", {}, el("tr", {}, ...[["j", "the position read"], ["kⱼ", "its key"], ["q⊙kⱼ", "q times kⱼ, number by number"],
      ["q·kⱼ", "their sum"], ["÷√d", "the raw score"], ["mask", "0 up to this position, −∞ after"],
      ["weight", "softmax of the scores"], ["weight·vⱼ", "its value, scaled"]].map(([t, title]) => el("th", { scope: "col", title }, t)))));
    const body = el("tbody");
    math.q = frame(D);
    body.append(el("tr", { class: "query" }, el("th", { scope: "row", id: "q-label" }, "q"), el("td", {}, math.q),
      el("td", { colspan: 6, class: "muted" }, "the query of this position, against every key below")));
    for (let j = 0; j < N; j++) {
      const line = {
        tr: el("tr", { "data-j": j }),
        key: frame(D), product: frame(D), scaled: frame(D),
        label: el("th", { scope: "row" }), dot: el("td"), score: el("td"), mask: el("td"), weight: el("td", { class: "weight" }),
      };
      line.tr.append(line.label, el("td", {}, line.key), el("td", {}, line.product), line.dot, line.score, line.mask, line.weight,
        el("td", {}, line.scaled));
      line.tr.addEventListener("mouseenter", () => highlightCell(j));
      line.tr.addEventListener("mouseleave", () => highlightCell(null));
      line.tr.addEventListener("click", () => { if (j <= rowOf(state.view)) selectCell(rowOf(state.view), j); });
      math.lines.push(line);
      body.append(line.tr);
    }
    math.out = frame(D);
    math.sum = el("td");
    math.total = el("tr", { class: "total" }, el("th", { scope: "row" }, "Σ"), el("td", { colspan: 5, class: "muted" },
      "the weights add up to 1; the head's output is the weighted sum of the values →"), math.sum, el("td", {}, math.out));
    body.append(math.total);
    table.append(body);
    math.picture = overlay(table.parentNode, table.querySelector("tr.query"), measureMath, drawMath);
  }

  // Line 0's strips and numbers, the height of a line, and the sums' row as it would lie below no line.
  function measureMath(at, last) {
    const [first, second] = math.lines, shown = math.lines.filter((line) => !line.tr.hidden).length;
    const pitch = second && !second.tr.hidden ? at(second.tr)[1] - at(first.tr)[1] : last ? last.pitch : 0;
    const up = ([x, y, w, h]) => [x, y - shown * pitch, w, h];
    const spots = { q: at(math.q, 1), pitch, out: up(at(math.out, 1)), sum: up(at(math.sum)), font: getComputedStyle(first.dot).font };
    for (const part of ["key", "product", "scaled"]) spots[part] = at(first[part], 1); // inside the frame's border
    for (const part of ["dot", "score", "mask", "weight"]) spots[part] = at(first[part]);
    spots.height = at(first.tr)[1] + N * pitch + at(math.total)[3]; // down to the sums below the longest name
    document.documentElement.style.setProperty("--worked-height", `${Math.ceil(spots.height)}px`);
    return spots;
  }

  // a number at the right of its cell, 3px in as the table's padding (or from its left edge)
  function paintNumber(ctx, text, [x, y, w, h], ink, font, align = "right") {
    ctx.drawImage(textPicture(text, ink, font, w, h, align), x, y, w, h);
  }

  // the worked row on its canvas: strips [values, scale, part, j] (j lines down) and each line's numbers
  function paintMath(strips, lines, sum) {
    const { ctx, canvas } = math.picture, spots = math.picture.place();
    if (!spots) return;
    const spot = (part, j) => { const [x, y, w, h] = spots[part]; return [x, y + j * spots.pitch, w, h]; };
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    paintStrips(ctx, strips.map(([values, scale, part, j]) => [values, scale, spot(part, j)]));
    for (const { j, shown, ink, bar } of lines) {
      for (const part of ["dot", "score", "mask"]) paintNumber(ctx, shown[part], spot(part, j), ink, spots.font);
      const [x, y, , h] = spot("weight", j);
      ctx.fillStyle = ACCENT;
      ctx.beginPath();
      ctx.roundRect(x + 3, y + h / 2 - 5, bar, 10, 2); // the weight as a bar, 40px for 1
      ctx.fill();
      paintNumber(ctx, shown.weight, [x + 3 + bar + 4, y, 40, h], ink, spots.font, "left");
    }
    paintNumber(ctx, sum, spot("sum", lines.length), INK, `bold ${spots.font}`);
  }

  function drawMath() {
    const view = state.view, T = view.tokens.length, { layer: l, head: h } = state;
    const i = rowOf(view), chosen = colOf(view), labels = view.tokens.map(label), start = h * D;
    const slice = (v) => v.subarray(start, start + D);
    const at = view.steps[i].layers[l], q = slice(at.q);
    const keys = view.steps.slice(0, i + 1).map((s) => slice(s.layers[l].k));
    const values = view.steps.slice(0, i + 1).map((s) => slice(s.layers[l].v));
    const products = keys.map((k) => k.map((x, n) => x * q[n]));
    const weights = at.weights[h], scores = at.scores[h];
    const scaledValues = values.map((v, j) => v.map((x) => x * weights[j]));
    const out = slice(at.out);
    const qk = largest(q, ...keys), prod = largest(...products), val = largest(out, ...scaledValues);
    write($("math-title"), `Row ${i} (“${labels[i]}”) worked out, layer ${l}, head ${h}`);
    write($("q-label"), `q${i}`);
    math.picture.place(); // before the lines are shown or hidden: measured on a laid-out table
    const strips = [[q, qk, "q", 0], [out, val, "out", T]], lines = [], sum = weights.reduce((a, b) => a + b, 0).toFixed(3);
    say(math.q, vectorText(`q${i}`, q));
    say(math.out, vectorText(`out${i}`, out));
    say(math.sum, sum);
    math.lines.forEach((line, j) => {
      hide(line.tr, j >= T);
      if (j >= T) return;
      const future = j > i;
      reclass(line.tr, future ? "future" : j === chosen ? "chosen" : "");
      write(line.label, `${j} ${labels[j]}`);
      for (const s of [line.key, line.product, line.scaled]) restyle(s, "visibility", future ? "hidden" : "");
      const shown = future ? { dot: "—", score: "—", mask: "−∞", weight: "0" }
        : { dot: fmt(scores[j] * Math.sqrt(D), 2), score: fmt(scores[j], 2), mask: "+0", weight: weights[j].toFixed(3) };
      for (const part of ["dot", "score", "mask", "weight"]) say(line[part], shown[part]);
      lines.push({ j, shown, ink: future ? MUTED_INK : INK, bar: future ? 0 : Math.round(weights[j] * 40) });
      if (future) return;
      say(line.key, vectorText(`k${j}`, keys[j]));
      say(line.product, vectorText(`q⊙k${j}`, products[j]));
      say(line.scaled, vectorText(`weight·v${j}`, scaledValues[j]));
      strips.push([keys[j], qk, "key", j], [products[j], prod, "product", j], [scaledValues[j], val, "scaled", j]);
    });
    paintMath(strips, lines, sum);
    write($("math-legend"), `d = ${D}, so ÷√d divides by ${fmt(Math.sqrt(D))}. Strips: red above 0, blue below; ` +
      `q and the keys share one scale, the products another, the values a third. A later position's score is −∞, so its weight is 0.`);
    math.numbers = { i, layer: l, head: h, q, keys, products, scores, weights, values, scaledValues, out };
  }

  function highlightLine(j) {
    math.lines.forEach((line, n) => line.tr.classList.toggle("hover", n === j));
  }

  function highlightCell(j) {
    const i = rowOf(state.view);
    matrix.cells[i].forEach((cell, n) => cell.classList.toggle("hover", n === j));
  }

  // ---- where q, k and v come from --------------------------------------------------------------

  const flow = { frames: {}, labels: {}, picture: null };

  function buildFlow() {
    const E = config.n_embd, gains = config.norm_scale ? " × the layer's norm gains" : "";
    const step = (name, what) => {
      flow.frames[name] = frame(E);
      flow.labels[name] = el("span", { class: "what" }, what);
      return el("div", { class: "flow-step" }, flow.labels[name], flow.frames[name], el("span", { class: "shape" }, `[${E}]`));
    };
    $("flow-steps").append(
      step("wte", "wte[token]"),
      step("wpe", "+ wpe[position]"),
      step("x0", "rmsnorm: the residual stream's start"),
      step("residual", "what the layer reads"),
      step("a", `rmsnorm${gains}`),
      step("q", "× W_Q → q"),
      step("k", "× W_K → k"),
      step("v", "× W_V → v"),
    );
    flow.picture = overlay($("flow-steps"), $("flow-steps"),
      (at) => Object.fromEntries(Object.entries(flow.frames).map(([name, node]) => [name, at(node, 1)])),
      () => redrawIfSeen(offscreen.flow));
  }

  function drawFlow() {
    const view = state.view, { layer: l, head: h } = state, i = rowOf(view), j = colOf(view), E = config.n_embd;
    const labels = view.tokens.map(label), token = view.tokens[i];
    const row = (W, n) => W.data.subarray(n * W.cols, (n + 1) * W.cols);
    const s = view.steps[i], layer = s.layers[l], keyLayer = view.steps[j].layers[l];
    const x0 = view.steps[i].layers[0].residual;
    const scale = largest(row(model.weights.wte, token), row(model.weights.wpe, i));
    const qkScale = largest(layer.q, keyLayer.k), from = h * D, to = (h + 1) * D;
    const strips = { // name: [values, scale, what a screen reader hears it called, and the head's slice]
      wte: [row(model.weights.wte, token), scale, `wte[${token}]`], wpe: [row(model.weights.wpe, i), scale, `wpe[${i}]`],
      x0: [x0, largest(x0), "x"], residual: [layer.residual, largest(layer.residual), "x"], a: [layer.a, largest(layer.a), "a"],
      q: [layer.q, qkScale, `q${i}`, from, to], k: [keyLayer.k, qkScale, `k${j}`, from, to],
      v: [keyLayer.v, largest(keyLayer.v), `v${j}`, from, to],
    };
    for (const [name, [values, , what]] of Object.entries(strips)) say(flow.frames[name], vectorText(what, values));
    const spots = flow.picture.place();
    if (spots) {
      const { ctx, canvas } = flow.picture;
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      paintStrips(ctx, Object.entries(strips).map(([name, [values, scale, , a, b]]) => [values, scale, spots[name], a, b]));
    }
    write(flow.labels.wte, `wte[“${labels[i]}”]`);
    write(flow.labels.wpe, `+ wpe[${i}]`);
    write(flow.labels.residual, l === 0 ? "layer 0 reads it as it is"
      : l === 1 ? "after layer 0 adds its attention and MLP" : `after layers 0–${l - 1} add their attention and MLP`);
    write(flow.labels.q, `× W_Q [${E}×${E}] → q${i}`);
    write(flow.labels.k, `× W_K → k${j} (of position ${j}, “${labels[j]}”)`);
    write(flow.labels.v, `× W_V → v${j}`);
    write($("flow-note"), `For row ${i} (“${labels[i]}”) and the selected cell's position ${j}, layer ${l}: every ` +
      `position's vector is made the same way, from its own token and position. Head ${h} uses numbers ` +
      `${h * D}–${(h + 1) * D - 1} of q, k and v (the others faded): the strips in the worked row above.`);
  }

  // ---- predictions, under the sampling filters ------------------------------------------------

  const TOP = 5;
  const predictions = { rows: [], chart: [] };

  function buildPredictions() {
    for (let i = 0; i < N; i++) {
      const choices = Array.from({ length: Math.min(TOP, V) }, () => {
        const char = el("span", { class: "char" }), bar = el("span", { class: "bar" }), p = el("span", { class: "p" });
        return { node: el("span", { class: "choice" }, char, bar, p), char, bar, p };
      });
      const row = { node: el("div", { class: "prediction" }), after: el("span", { class: "after" }), next: el("span", { class: "next" }), choices };
      row.node.append(row.after, el("span", { class: "bars" }, ...choices.map((c) => c.node)), row.next);
      row.node.addEventListener("click", () => selectCell(i, null));
      predictions.rows.push(row);
    }
    $("predictions").append(...predictions.rows.map((r) => r.node));
    for (let n = 0; n < V; n++) {
      const char = el("span", { class: "char" }), bar = el("span", { class: "bar" }), raw = el("span", { class: "raw" }), p = el("span", { class: "p" });
      predictions.chart.push({ node: el("div", { class: "next-bar" }, char, el("span", { class: "track" }, raw, bar), p), char, bar, raw, p });
    }
    $("next-chart").append(...predictions.chart.map((c) => c.node));
  }

  // for position i: the model's probabilities, and those a draw would use after the filters
  function distributions(view, i, filters) {
    const logits = view.steps[i].logits;
    const filtered = MiniGPTModel.softmax(MiniGPTModel.filterLogits(logits, { ...filters, first: i === 0, bos: BOS }));
    return { probs: MiniGPTModel.softmax(Array.from(logits)), filtered };
  }

  function drawPredictions() {
    const view = state.view, T = view.tokens.length, filters = options();
    let nats = 0;
    predictions.rows.forEach((row, i) => {
      hide(row.node, i >= T);
      if (i >= T) return;
      const { probs, filtered } = distributions(view, i, filters);
      const actual = i + 1 < T ? view.tokens[i + 1] : BOS; // the next character, or the end
      nats -= Math.log(probs[actual]);
      const best = probs.map((p, t) => [p, t]).sort((a, b) => b[0] - a[0]).slice(0, TOP);
      row.node.classList.toggle("worked", i === rowOf(view));
      row.after.textContent = `after “·${view.kept.slice(0, i).join("")}”`;
      best.forEach(([p, t], n) => {
        const c = row.choices[n], removed = filtered[t] === 0;
        reclass(c.node, `choice${t === actual ? " actual" : ""}${removed ? " removed" : ""}`);
        c.node.title = `${label(t)}: ${fmt(p, 4)} from the model, ${fmt(filtered[t], 4)} after the filters`;
        write(c.char, label(t));
        restyle(c.bar, "width", `${Math.max(1, Math.round(filtered[t] * 70))}px`);
        write(c.p, fmt(filtered[t], 2));
      });
      row.next.textContent = `next is ${label(actual)}: p = ${fmt(probs[actual], 3)}, −log p = ${fmt(-Math.log(probs[actual]), 2)}`;
    });
    const off = state.off.heads.length + state.off.attention.length + state.off.mlp.length;
    $("loss").textContent = `Loss of “${view.kept.join("")}”${off ? `, with ${off} part${off > 1 ? "s" : ""} off` : ""}: ${fmt(nats / T, 3)} nats per character ` +
      `(${T} prediction${T > 1 ? "s" : ""}, the end included; the model's own probabilities, before any filter). ` +
      `A uniform guess: log(${V}) = ${fmt(Math.log(V), 3)}.`;
    drawNextChart(filters);
  }

  function drawNextChart(filters = options()) {
    const view = state.view, i = rowOf(view);
    const { probs, filtered } = distributions(view, i, filters);
    const order = probs.map((_, t) => t).sort((a, b) => probs[b] - probs[a]);
    const kept = filtered.filter((p) => p > 0).length;
    $("next-title").textContent = `Every next token after “·${view.kept.slice(0, i).join("")}”: ${kept} of ${V} kept`;
    order.forEach((t, n) => {
      const c = predictions.chart[n], removed = filtered[t] === 0;
      reclass(c.node, `next-bar${removed ? " removed" : ""}`);
      setData(c.node, "token", label(t));
      setData(c.node, "p", String(filtered[t]));
      write(c.char, label(t));
      restyle(c.raw, "width", `${(probs[t] * 100).toFixed(1)}%`);
      restyle(c.bar, "width", `${(filtered[t] * 100).toFixed(1)}%`);
      write(c.p, removed ? `removed (${fmt(probs[t], 3)})` : fmt(filtered[t], 3));
    });
  }

  // ---- each layer's guess: the logit lens ------------------------------------------------------

  const lens = { heads: [], rows: [] };
  const STAGES = ["after the embeddings", ...Array.from({ length: config.n_layer }, (_, l) => [`after layer ${l}'s attention`, `after layer ${l}'s MLP`]).flat()];

  function buildLens() {
    const table = $("lens-table");
    const header = el("tr", {}, el("th", { scope: "col" }, "read → next"));
    for (let t = 0; t < N; t++) {
      const th = el("th", { scope: "col" });
      lens.heads.push(th);
      header.append(th);
    }
    const body = el("tbody");
    for (const stage of STAGES) {
      const cells = Array.from({ length: N }, () => el("td"));
      lens.rows.push(cells);
      body.append(el("tr", {}, el("th", { scope: "row" }, stage), ...cells));
    }
    table.append(el("thead", {}, header), body);
  }

  // every stage's probabilities at every position: [stage][position][token]
  function lensOf(view) {
    const streams = (s) => [s.layers[0].residual, ...s.layers.flatMap((layer) => [layer.afterAttention, layer.afterMLP])];
    const byPosition = view.steps.map((s) => streams(s).map((x) => MiniGPTModel.softmax(Array.from(MiniGPTModel.readOff(model, x)))));
    return STAGES.map((_, stage) => byPosition.map((stages) => stages[stage]));
  }

  function drawLens() {
    const view = state.view, T = view.tokens.length, probs = lensOf(view);
    const next = (t) => (t + 1 < T ? view.tokens[t + 1] : BOS);
    lens.heads.forEach((th, t) => {
      hide(th, t >= T);
      if (t < T) write(th, `${label(view.tokens[t])} → ${label(next(t))}`);
    });
    lens.rows.forEach((cells, stage) => cells.forEach((td, t) => {
      hide(td, t >= T);
      if (t >= T) return;
      const p = probs[stage][t], best = p.indexOf(Math.max(...p)), actual = p[next(t)];
      write(td, `${label(best)} ${Math.round(100 * p[best])}%`);
      restyle(td, "background", viridis(actual));
      restyle(td, "color", inkOn(actual));
      td.title = `${STAGES[stage]}: likeliest ${label(best)} ${fmt(p[best], 3)}; the actual next, ${label(next(t))}, ${fmt(actual, 3)}`;
    }));
  }

  // ---- switching parts off: what each costs ----------------------------------------------------

  const costRows = [];
  const stepAblations = new Map(); // snapshot index -> its costs, in DATA.ablation's shape
  const decodedMeans = new Map(); // the carried base64 of mean outputs -> those outputs

  // what each part costs on the names the page was written with, and each part's mean output (what
  // mean mode puts in its place), at the step shown: the checkpoint's, or the snapshot's
  function ablationNow() {
    const at = state.snapshot === null || !DATA.snapshots.ablation ? null : DATA.snapshots.ablation[state.snapshot];
    if (!at) return DATA.ablation;
    if (!stepAblations.has(state.snapshot)) {
      const order = DATA.snapshots.parts;
      const report = (mode) => ({ loss: at[mode].loss,
        parts: DATA.ablation[mode].parts.map((p) => ({ ...p, cost: at[mode].costs[order.indexOf(p.part)] })) });
      stepAblations.set(state.snapshot, { names: DATA.ablation.names, zero: report("zero"), mean: report("mean"), means: at.means });
    }
    return stepAblations.get(state.snapshot);
  }

  // the parts' mean outputs at the step shown, decoded once
  function meansNow() {
    const carried = ablationNow().means;
    if (!decodedMeans.has(carried)) decodedMeans.set(carried, meansFrom(carried));
    return decodedMeans.get(carried);
  }

  // mean outputs carried as one base64 float32 buffer (explorer_page.py's means_base64: heads,
  // attention, MLPs, each layer by layer) -> { head: [l][h], attention: [l], mlp: [l] }
  function meansFrom(base64) {
    const floats = MiniGPTModel.float32s(base64);
    const L = config.n_layer, H = config.n_head, C = config.n_embd, hd = C / H;
    const slice = (at, n) => floats.subarray(at, at + n);
    const head = Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => slice((l * H + h) * hd, hd)));
    const rows = (at) => Array.from({ length: L }, (_, l) => slice(at + l * C, C));
    return { head, attention: rows(L * C), mlp: rows(2 * L * C) };
  }

  // the table's rows, in the order of the chosen mode's costs at the checkpoint (kept as the step
  // moves, so a part stays on its row)
  function buildCosts() {
    const table = $("ablation-table"), found = DATA.ablation;
    costRows.length = 0;
    for (let n = switches.length - 1; n >= 0; n--) if (table.contains(switches[n].box)) switches.splice(n, 1); // the old table's
    if (!found) return table.replaceChildren(el("caption", {}, "No names to measure the parts on were at hand when this page was written."));
    const rows = found[state.off.mode].parts.map((p) => {
      const live = el("td", { class: "live" }), bar = el("span", { class: "bar" }), cost = el("span"), label = el("td", { class: "label" });
      costRows.push({ part: p, live, bar, cost, label });
      return el("tr", {}, el("th", { scope: "row" }, p.part),
        el("td", {}, partSwitch(p.kind === "head" ? "head" : p.kind, p.layer, p.head, "on")), label,
        el("td", { class: "num" }, bar, cost), live);
    });
    table.replaceChildren(el("caption", { id: "costs-caption" }),
      el("thead", {}, el("tr", {}, ...["part", "on", "what it tends to do", `cost on ${found.names}`, "cost on the name in the box, from the parts on now"]
        .map((t) => el("th", { scope: "col" }, t)))),
      el("tbody", {}, ...rows));
    markSwitches();
    drawCosts();
  }

  const signed = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(4)}`;

  // the costs on the names, at the step shown
  function drawCosts() {
    const found = ablationNow();
    if (!found) return;
    const report = found[state.off.mode], cost = new Map(report.parts.map((p) => [p.part, p.cost]));
    const most = Math.max(1e-9, ...report.parts.map((p) => Math.abs(p.cost)));
    const step = state.snapshot === null ? "" : ` at step ${DATA.snapshots.steps[state.snapshot].toLocaleString("en")}`;
    write($("costs-caption"), `Loss with every part on${step}: ${report.loss.toFixed(4)} nats per token over ${found.names}.`);
    for (const row of costRows) {
      const c = cost.get(row.part.part);
      write(row.cost, signed(c));
      if (row.part.kind === "head") write(row.label, headLabel(row.part.layer, row.part.head));
      restyle(row.bar, "width", `${Math.round((60 * Math.max(0, c)) / most)}px`);
    }
  }

  // the loss of the name in the box, per token, with these parts off; `from` reuses the layers
  // before from.layer of a pass that differs only after them (model.js's forward)
  function nameLoss(off, from = null) {
    const tokens = state.view.tokens;
    const steps = MiniGPTModel.forward(model, tokens, switchedOff(off), from);
    let nats = 0;
    steps.forEach((s, i) => { nats -= Math.log(MiniGPTModel.softmax(Array.from(s.logits))[i + 1 < tokens.length ? tokens[i + 1] : BOS]); });
    return nats / steps.length;
  }

  // each part's cost on the name in the box: its loss with that part off too, minus its loss now
  function drawLiveCosts() {
    const started = performance.now(), now = nameLoss(state.off);
    let heads = performance.now() - started; // the time the heads' costs take, with the loss they share
    for (const { part, live } of costRows) {
      if (!isOn(part.kind, part.layer, part.head)) { write(live, "off"); continue; }
      const partStarted = performance.now();
      const more = { ...state.off, heads: [...state.off.heads], attention: [...state.off.attention], mlp: [...state.off.mlp] };
      if (part.kind === "head") more.heads.push([part.layer, part.head]);
      else more[part.kind].push(part.layer);
      // the layers before this part's are the same as now: start from what they made
      const from = { layer: part.layer, residual: state.view.steps.map((step) => step.layers[part.layer].residual) };
      const cost = nameLoss(more, from) - now;
      write(live, signed(cost));
      if (part.kind === "head") heads += performance.now() - partStarted;
    }
    $("ablation-table").dataset.liveMs = String(performance.now() - started);
    $("ablation-table").dataset.headsMs = String(heads);
  }

  // ---- what each head tends to do (measured when the page was written) ---------------------------

  const headCards = [];
  // what the heads tend to do at the step shown: the checkpoint's, or the snapshot's
  const roles = () => (state.snapshot === null ? DATA.roles : { ...DATA.roles, ...DATA.snapshots.roles[state.snapshot] });
  const headLabel = (l, h) => (roles().labels ? roles().labels[l][h] : "");
  const headParts = [];

  // the cards' bars and labels, for the step shown
  function drawHeads() {
    const now = roles();
    if (!now.shares) return;
    const most = Math.max(...DATA.roles.shares.flat(2), ...DATA.roles.even, ...now.shares.flat(2));
    headParts.forEach(({ l, h, fills, role, chart }) => {
      const shares = now.shares[l][h];
      fills.forEach((fill, k) => restyle(fill, "height", `${(100 * shares[k]) / most}%`));
      write(role, now.labels[l][h]);
      chart.setAttribute("aria-label", `its weight: ${shares.map((x, k) => `${DATA.roles.offsets[k]} ${Math.round(100 * x)}%`).join(", ")}`);
    });
  }

  function buildHeads() {
    const roles = DATA.roles;
    if (!roles.shares) {
      $("roles-note").textContent = "No names to measure the heads on were at hand when this page was written.";
      return;
    }
    $("roles-note").textContent = `Where each head's weight goes, averaged over every row (positions 1 and on) of ` +
      `${roles.names}; the ticks mark what a head spreading its weight evenly would give. Pick a head for its ` +
      `character × character picture.`;
    const most = Math.max(...roles.shares.flat(2), ...roles.even);
    roles.shares.forEach((heads, l) => heads.forEach((shares, h) => {
      const fills = shares.map(() => el("span", { class: "fill" }));
      const bars = shares.map((s, k) => el("span", { class: "offset", title: `${roles.offsets[k]} (even: ${Math.round(100 * roles.even[k])}%)` },
        fills[k], el("span", { class: "even", style: { bottom: `${(100 * roles.even[k]) / most}%` } })));
      const chart = el("span", { class: "offsets", role: "img" }, ...bars), role = el("span", { class: "role" });
      const card = el("button", { class: "head-card", "data-layer": l, "data-head": h, onclick: () => selectHead(l, h) },
        el("span", { class: "name" }, `layer ${l}, head ${h}`), chart, role);
      headParts.push({ l, h, fills, role, chart });
      headCards.push(card);
    }));
    drawHeads();
    $("heads").append(el("p", { class: "offset-key", "aria-hidden": "true" }, "bars, left to right: " + roles.offsets.join(" · ")), ...headCards);
    $("label-rules").textContent = roles.rules;
  }

  // the selected head's mean weight from each character read (rows) to each token before it (columns)
  function drawCharMatrix() {
    const roles = DATA.roles, rows = roles.chars[state.layer][state.head];
    const table = el("table", { class: "chars", id: "char-table" });
    const tokens = [...vocab, "·"];
    table.append(el("tr", {}, el("th", { class: "corner", scope: "col" }, "reads ↓ on →"), ...tokens.map((t) => el("th", { scope: "col" }, t))));
    rows.forEach((row, c) => {
      if (row.every((w) => w === 0)) return; // a character the names never had
      table.append(el("tr", {}, el("th", { scope: "row" }, vocab[c]), ...row.map((w, t) => el("td", {
        style: { background: viridis(w) }, title: `reading ${vocab[c]}: ${Math.round(100 * w)}% on ${tokens[t]}`,
      }))));
    });
    $("char-matrix").replaceChildren(el("h3", {}, `Layer ${state.layer}, head ${state.head}, by character: where the weight goes`),
      el("p", { class: "muted" }, `Each row is a character being read; each column, what its weight lands on (· the boundary token), ` +
        `averaged over ${roles.names}. Bright means most of the row.`), el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "the character picture, scrolls sideways" }, table));
  }

  // ---- generating -------------------------------------------------------------------------------

  function options() {
    const number = (id, fallback) => (Number.isFinite(parseFloat($(id).value)) ? parseFloat($(id).value) : fallback);
    return {
      temperature: Math.max(0.05, number("temperature", 1)),
      topK: Math.max(0, Math.round(number("top-k", 0))),
      topP: Math.min(1, Math.max(0.01, number("top-p", 1))),
    };
  }

  function showFilters() {
    const { temperature, topK, topP } = options();
    $("temperature-value").textContent = temperature.toFixed(2);
    $("top-k-value").textContent = topK === 0 ? "off" : String(topK);
    $("top-p-value").textContent = topP >= 1 ? "off" : topP.toFixed(2);
  }

  // the seed moves on after each draw, so the next click draws something new, and typing a seed
  // back in repeats the draws that followed it
  function nextSeed() {
    const seed = Math.round(parseFloat($("seed").value)) || 0;
    $("seed").value = seed + 1;
    return seed;
  }

  // The checkpoint's check, as membership.py makes it: the names themselves, or a Bloom filter whose
  // bits (h1 + i * h2) mod size, for i < hashes, are all set for every training name; h1 and h2 are
  // the halves of the name's 64-bit FNV-1a fingerprint over its token ids.
  function inTrainingData(name) {
    if (trainingNames) return trainingNames.has(name);
    if (!bloomBits) return null;
    const chars = [...name];
    if (!chars.every((ch) => ids.has(ch))) return false; // a character no training name has
    const mask = (1n << 64n) - 1n;
    let h = 0xcbf29ce484222325n;
    for (const ch of chars) h = ((h ^ BigInt(ids.get(ch))) * 0x100000001b3n) & mask;
    const low = Number(h & 0xffffffffn), high = Number(((h >> 32n) & 0xffffffffn) | 1n), size = bloomBits.length * 8;
    for (let i = 0; i < DATA.membership.hashes; i++) {
      const bit = (low + i * high) % size;
      if (!((bloomBits[bit >> 3] >> (bit & 7)) & 1)) return false;
    }
    return true;
  }

  function addGenerated(name) {
    const known = inTrainingData(name);
    const mark = known === null ? "" : known ? "in the training data" : "new";
    $("generated").prepend(el("li", { class: known ? "known" : "new" },
      el("button", { class: "name", onclick: () => setText(name), title: "read it" }, name || "(empty)"), el("span", { class: "mark" }, mark)));
  }

  function sample({ temperature = 1, topK = 0, topP = 1, seed = 1, prefix = "" } = {}) {
    const read = readText(prefix);
    const random = MiniGPTModel.seededRandom(seed);
    const tokens = MiniGPTModel.sampleName(model, { temperature, topK, topP, random, prefix: read.tokens.slice(1) });
    return read.kept.join("") + tokens.map((t) => vocab[t]).join("");
  }

  function nextCharacter() {
    const view = state.view;
    if (view.tokens.length >= N) {
      $("gen-note").textContent = `The name is as long as the model reads (${N - 1} characters).`;
      return;
    }
    const logits = view.steps[view.steps.length - 1].logits;
    const candidates = MiniGPTModel.filterLogits(logits, { ...options(), first: view.tokens.length === 1, bos: BOS });
    const token = MiniGPTModel.sampleToken(candidates, MiniGPTModel.seededRandom(nextSeed())());
    if (token === BOS) {
      $("gen-note").textContent = `The model ends the name here.`;
      addGenerated(view.kept.join(""));
      return;
    }
    $("gen-note").textContent = `Drew “${vocab[token]}”.`;
    setText(view.kept.join("") + vocab[token]);
  }

  function wholeName() {
    const name = sample({ ...options(), seed: nextSeed() });
    addGenerated(name);
    $("gen-note").textContent = "";
    setText(name);
  }

  function tenNames() {
    for (let n = 0; n < 10; n++) addGenerated(sample({ ...options(), seed: nextSeed() }));
  }

  // ---- the model card and its loss curve ----------------------------------------------------------

  function drawCard() {
    const c = DATA.card, m = config;
    const loss = (x) => (x === null || x === undefined ? "—" : x.toFixed(4));
    const facts = [
      ["parameters", `${c.parameters.toLocaleString("en")}: ${m.n_layer} layer${m.n_layer > 1 ? "s" : ""}, ${m.n_head} heads, ${m.n_embd} dims, block ${m.block_size}`],
      ["architecture", `${m.activation}, ${m.final_norm ? "final norm" : "no final norm"}, ${m.norm_scale ? "learned norm gains" : "no norm gains"}`],
      ["training", `step ${c.step.toLocaleString("en")}, validation loss ${loss(c.val_loss)} (best ${loss(c.best_val_loss)})`],
      ["data", c.data],
      ["vocabulary", `${V} tokens: ${vocab.join("")} and the boundary token ·`],
      ["checkpoint", c.checkpoint],
    ];
    $("card").replaceChildren(el("table", {}, ...facts.map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)))),
      el("details", {}, el("summary", {}, "the whole recipe"),
        el("pre", {}, Object.entries(DATA.config).map(([section, values]) =>
          `[${section}]\n` + Object.entries(values).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join("\n")).join("\n\n"))));
    drawCurve();
  }

  let curveMarker = null, curveX = null;

  function moveStepMarker(step) {
    const val = DATA.curve ? DATA.curve.val.filter(([s]) => s <= step).pop() : null;
    $("step-loss").textContent = val ? `validation loss ${val[1].toFixed(3)} at step ${val[0].toLocaleString("en")}` : "";
    if (!curveMarker) return;
    curveMarker.setAttribute("x1", curveX(step));
    curveMarker.setAttribute("x2", curveX(step));
  }

  // the run's loss against step, from metrics.jsonl, as inline SVG, with two references: a uniform
  // guess, log(V), and a guess from character frequencies alone (the unigram loss)
  function drawCurve() {
    const curve = DATA.curve;
    if (!curve) return $("curve").replaceChildren(el("p", { class: "muted" }, "No metrics.jsonl beside the checkpoint, so no loss curve."));
    const uniform = Math.log(V), unigram = DATA.roles.unigram;
    const W = 420, H = 210, left = 44, right = 10, top = 10, bottom = 40;
    const all = [...curve.train, ...curve.val];
    const steps = all.map((p) => p[0]), losses = [...all.map((p) => p[1]), uniform];
    const [x0, x1] = [Math.min(...steps), Math.max(...steps)];
    const [y0, y1] = [Math.min(...losses) - 0.05, Math.max(...losses) + 0.05];
    const x = (s) => left + ((s - x0) / Math.max(1, x1 - x0)) * (W - left - right);
    const y = (v) => top + ((y1 - v) / Math.max(1e-9, y1 - y0)) * (H - top - bottom);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("id", "curve-svg");
    svg.setAttribute("role", "img");
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      if (text !== undefined) node.textContent = text;
      svg.append(node);
      return node;
    };
    add("line", { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, class: "axis-line" });
    add("line", { x1: left, y1: top, x2: left, y2: H - bottom, class: "axis-line" });
    for (const v of [y0 + 0.05, (y0 + y1) / 2, y1 - 0.05]) add("text", { x: left - 4, y: y(v) + 3, "text-anchor": "end" }, v.toFixed(2));
    add("text", { x: left, y: H - bottom + 13, "text-anchor": "middle" }, x0.toLocaleString("en"));
    add("text", { x: W - right, y: H - bottom + 13, "text-anchor": "end" }, x1.toLocaleString("en"));
    add("text", { x: (left + W) / 2, y: H - 4, "text-anchor": "middle", class: "title" }, "optimizer step");
    add("text", { x: 10, y: (top + H - bottom) / 2, transform: `rotate(-90 10 ${(top + H - bottom) / 2})`, "text-anchor": "middle", class: "title" }, "loss (nats per token)");
    const reference = (v, text, cls) => {
      add("line", { x1: left, y1: y(v), x2: W - right, y2: y(v), class: `reference ${cls}` });
      add("text", { x: W - right - 2, y: y(v) - 3, "text-anchor": "end", class: `reference ${cls}` }, text);
    };
    reference(uniform, `uniform guess, log ${V} = ${uniform.toFixed(2)}`, "uniform");
    if (unigram) reference(unigram, `character frequencies alone: ${unigram.toFixed(2)}`, "unigram");
    const line = (points, cls) => add("polyline", { points: points.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: cls });
    line(curve.train, "train");
    if (curve.val.length > 1) line(curve.val, "val");
    curve.val.forEach(([s, v]) => add("circle", { cx: x(s), cy: y(v), r: 2, class: "val" }));
    const summary = [`training loss from ${curve.train.length ? curve.train[0][1] : "—"} at step ${x0}`];
    if (curve.val.length) {
      const best = curve.val.reduce((a, b) => (b[1] < a[1] ? b : a));
      add("circle", { cx: x(best[0]), cy: y(best[1]), r: 4.5, class: "best" });
      add("text", { x: x(best[0]), y: y(best[1]) + 15, "text-anchor": x(best[0]) > W - 80 ? "end" : "middle", class: "best" },
        `best ${best[1].toFixed(3)} at step ${best[0].toLocaleString("en")}`);
      summary.push(`best validation loss ${best[1]} at step ${best[0]}`);
    }
    if (DATA.snapshots) { // where the step slider is: a line that moves with it
      curveMarker = add("line", { id: "step-marker", y1: top, y2: H - bottom, class: "marker" });
      curveX = x;
    }
    svg.setAttribute("aria-label", `Loss against step: ${summary.join("; ")}; a uniform guess gives ${uniform.toFixed(2)}.`);
    $("curve").replaceChildren(svg, el("p", { class: "legend" }, el("span", { class: "train" }, "— training (one batch)"), " ",
      el("span", { class: "val" }, "● validation"), " ", el("span", { class: "best" }, "◯ best")));
  }

  // ---- watching attention form: the training snapshots ------------------------------------------

  const decoded = new Map(); // snapshot index -> its model, decoded once

  function showSnapshot(index) {
    const snaps = DATA.snapshots, step = snaps.steps[index];
    const exact = step === snaps.checkpoint_step && index === snaps.steps.lastIndexOf(step);
    state.snapshot = exact ? null : index;
    if (!exact && !decoded.has(index)) decoded.set(index, MiniGPTModel.loadSnapshot(config, snaps, index));
    model = exact ? finalModel : decoded.get(index);
    $("step-slider").value = index;
    $("step-value").textContent = `step ${step.toLocaleString("en")}${exact ? " (the checkpoint)" : ""}, ` +
      `snapshot ${index + 1} of ${snaps.steps.length}`;
    $("ablation-note").textContent = exact ? "" : `The costs, the switches' mean outputs and the labels are this step's; ` +
      `the rows keep the checkpoint's order (step ${snaps.checkpoint_step.toLocaleString("en")}).`;
    moveStepMarker(step);
    markSelectedHead();
    drawHeads();
    drawCosts();
    render();
  }

  let playing = null;
  function play() {
    if (playing) return stopPlaying();
    const slider = $("step-slider");
    if (+slider.value >= +slider.max) showSnapshot(0);
    $("play").textContent = "❚❚ pause";
    playing = setInterval(() => {
      if (+slider.value >= +slider.max) return stopPlaying();
      showSnapshot(+slider.value + 1);
    }, 700);
  }
  function stopPlaying() {
    clearInterval(playing);
    playing = null;
    $("play").textContent = "▶ play";
  }

  function buildSteps() {
    const snaps = DATA.snapshots;
    if (!snaps || !snaps.steps.length) return;
    $("training-steps").hidden = false;
    Object.assign($("step-slider"), { min: 0, max: snaps.steps.length - 1 });
    $("step-slider").addEventListener("input", (event) => { stopPlaying(); showSnapshot(+event.target.value); });
    $("play").addEventListener("click", play);
    const last = snaps.steps.lastIndexOf(snaps.checkpoint_step);
    $("step-slider").value = last >= 0 ? last : snaps.steps.length - 1;
    $("step-value").textContent = `step ${snaps.checkpoint_step.toLocaleString("en")} (the checkpoint), snapshot ${+$("step-slider").value + 1} of ${snaps.steps.length}`;
  }

  // ---- wiring ---------------------------------------------------------------------------------------

  // Parts below the first screen are drawn when they are on screen (or near it): a keystroke
  // that redraws only what can be seen leaves the browser less to lay out. A part that changed
  // while out of sight is drawn as it comes into view.
  const offscreen = { flow: { draw: () => drawFlow(), seen: false, stale: true },
                      predict: { draw: () => drawPredictions(), seen: false, stale: true },
                      ablation: { draw: () => drawLiveCosts(), seen: false, stale: true },
                      lens: { draw: () => drawLens(), seen: false, stale: true } };
  const watcher = new IntersectionObserver((entries) => entries.forEach((entry) => {
    const part = offscreen[entry.target.id];
    part.seen = entry.isIntersecting;
    if (part.seen && part.stale) redrawIfSeen(part);
  }));

  function redrawIfSeen(part) {
    part.stale = !part.seen;
    if (part.seen) part.draw();
  }

  // after the text changes: the model runs again and everything that shows it redraws
  function render() {
    const view = (state.view = analyse($("name-input").value, switchedOff(), true));
    markSwitches();
    drawInput(view);
    drawGrid();
    drawSelection();
    redrawIfSeen(offscreen.predict);
    redrawIfSeen(offscreen.ablation);
    redrawIfSeen(offscreen.lens);
  }

  // after the head, row or cell changes: the parts that show the selection
  function drawSelection() {
    drawMatrix();
    drawMath();
    redrawIfSeen(offscreen.flow);
  }

  function selectHead(layer, head) {
    Object.assign(state, { layer, head });
    markSelectedHead();
    drawSelection();
    if (DATA.roles.chars) drawCharMatrix();
  }

  function selectCell(row, col) {
    Object.assign(state, { row: row === state.view.tokens.length - 1 ? null : row, col });
    drawSelection();
    redrawIfSeen(offscreen.predict);
  }

  function setText(text) {
    $("name-input").value = text;
    render();
  }

  $("name-input").addEventListener("input", render);
  for (const radio of document.querySelectorAll("input[name=show]")) {
    radio.addEventListener("change", () => { state.show = radio.value; drawMatrix(); });
  }
  for (const id of ["temperature", "top-k", "top-p"]) {
    $(id).addEventListener("input", () => { showFilters(); redrawIfSeen(offscreen.predict); });
  }
  for (const radio of document.querySelectorAll("input[name=off-mode]")) {
    radio.addEventListener("change", () => { state.off.mode = radio.value; buildCosts(); render(); });
  }
  $("all-on").addEventListener("click", () => { Object.assign(state.off, { heads: [], attention: [], mlp: [] }); render(); });
  $("next-char").addEventListener("click", nextCharacter);
  $("whole-name").addEventListener("click", wholeName);
  $("ten-names").addEventListener("click", tenNames);
  $("top-k").max = V;
  $("temperature").value = DATA.config.sample.temperature;
  $("top-k").value = DATA.config.sample.top_k;
  $("top-p").value = DATA.config.sample.top_p;
  $("membership-note").textContent = DATA.membership.note;
  showFilters();
  buildInput();
  buildGrid();
  buildMatrix();
  buildMath();
  buildFlow();
  buildPredictions();
  buildHeads();
  buildCosts();
  buildLens();
  drawCard();
  buildSteps();
  $("name-input").value = DATA.start_text;
  render();
  for (const id of Object.keys(offscreen)) watcher.observe($(id));
  markSelectedHead();
  if (DATA.roles.chars) drawCharMatrix();

  // For tests and the curious, from the browser console: minigpt.forward("emma")
  window.minigpt = {
    vocab,
    config: DATA.config,
    // {tokens, logits [T][vocab_size], attention [n_layer][n_head][T][T]} for the boundary token and then `text`;
    // `off` ({heads: [[l, h]], attention: [l], mlp: [l], mode: "zero" or "mean"}) switches parts off
    forward(text, off = null) {
      const view = analyse(text, off ? switchedOff({ heads: [], attention: [], mlp: [], mode: "zero", ...off }) : null);
      return { tokens: view.tokens, logits: view.steps.map((s) => Array.from(s.logits)), attention: attentionOf(view) };
    },
    // what the page shows now: its tokens and logits (computed for the text box, reusing what it shares with the last)
    shown: () => ({ tokens: state.view.tokens, logits: state.view.steps.map((s) => Array.from(s.logits)) }),
    // the probabilities the next draw after `text` comes from, filtered as sampling.py filters them
    nextDistribution(text, { temperature = 1, topK = 0, topP = 1 } = {}) {
      const view = analyse(text);
      const logits = view.steps[view.steps.length - 1].logits;
      return MiniGPTModel.softmax(MiniGPTModel.filterLogits(logits, { temperature, topK, topP, first: view.tokens.length === 1 }));
    },
    // the numbers the worked row was drawn from: q, each k, q⊙k, the scores, weights, values and output
    worked() {
      const n = math.numbers, list = (v) => Array.from(v);
      return { i: n.i, layer: n.layer, head: n.head, q: list(n.q), keys: n.keys.map(list), products: n.products.map(list),
               scores: list(n.scores), weights: list(n.weights), values: n.values.map(list), out: list(n.out) };
    },
    // each stage's probabilities [stage][position][token] for `text`, as the lens table shows them
    lens: (text) => lensOf(analyse(text)),
    // show training snapshot `index` (DATA.snapshots.steps[index]); the page then runs its weights
    showSnapshot,
    sample,
    sampleNames: (n, opts = {}) => Array.from({ length: n }, (_, k) => sample({ ...opts, seed: (opts.seed || 1) + k })),
    inTrainingData,
    setText,
    setPart,
    liveCosts: () => { drawLiveCosts(); return costRows.map(({ part, live }) => [part.part, live.textContent]); },
    select: selectHead,
    selectCell,
  };
})();
