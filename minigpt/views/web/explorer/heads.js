// heads.js: the text box and every head at once. A part of the explorer page (state.js lists
// the parts).

const Heads = (() => {
const { $, BOUNDARY, DATA, N, config, headLabel, headOff, ids, isOn, selectHead, state, vocab } = State;
const { el, hide, markPartSwitches, partSwitch, reclass, viridisRGB, write } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="type" aria-labelledby="type-title">
  <h2 id="type-title"><label for="name-input">Type a name</label></h2>
  <input id="name-input" type="text" autocomplete="off" spellcheck="false" autocapitalize="none">
  <p class="reads">The model reads <span id="read" class="strip-text"></span></p>
  <p id="notes" class="note" role="status"></p>
  <h2 id="grid-title">Every head</h2>
  <p class="muted">One square per head: row i is how position i spreads its attention over the positions up to it.</p>
  <p class="visually-hidden" id="grid-keys">The arrow keys move between heads.</p>
  <div id="grid" role="group" aria-labelledby="grid-title" aria-describedby="grid-keys"></div>
  <div class="scale" aria-hidden="true"><span>weight 0</span><span class="ramp viridis"></span><span>1</span></div>
</section>`;

// ---- the text box ----

// The characters read, as tokens: spans made once (as many as a pasted paragraph shows) and
// rewritten only where the text changed, so a typed character changes one span.
const reading = { tokens: [], more: null };
function buildInput() {
  const shown = 4 * N; // a pasted paragraph is not drawn whole
  reading.tokens = Array.from({ length: shown }, () => el("span", { hidden: "" }));
  reading.more = el("span", { class: "muted", hidden: "" });
  $("read").append(el("span", { class: "token bos", title: "the boundary token: every name starts after it" }, BOUNDARY),
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
    const hint = readableHint(view.text);
    if (hint) notes.push(hint);
  }
  if (view.cut) {
    notes.push(`Cut ${view.cut} character${view.cut > 1 ? "s" : ""}: the model reads at most ${N - 1} after the boundary token.`);
  }
  write($("notes"), notes.join(" "));
}

// The advice data.py's readable_hint gives, when a plainer spelling reads whole: lowercase first
// (a vocabulary with accents reads "γιώργος" for "ΓΙΏΡΓΟΣ"), then without accents ("Émile": "emile")
function readableHint(text) {
  const reads = (t) => [...t].every((ch) => ids.has(ch)), lower = text.toLowerCase();
  if (lower !== text && reads(lower)) return `The vocabulary is lowercase: try “${lower}”.`;
  const plain = lower.normalize("NFD").replace(/\p{M}/gu, "");
  if (plain !== text && reads(plain)) return `The vocabulary has no accented letters: try “${plain}”.`;
  return null;
}

// ---- every head at once: one canvas over the grid, a pixel per cell scaled up -----------------
// The buttons hold empty squares (faces) and the one canvas paints every head's picture over
// them: one picture for the browser to composite at each keystroke, not sixteen.

const thumbs = [];
const gridPicture = { canvas: null, ctx: null, scratch: null, image: null, faces: [] };

function buildGrid() {
  const grid = $("grid");
  $("grid-keys").textContent = "The arrow keys move between heads; Tab reaches each switch under them.";
  grid.style.gridTemplateColumns = `auto repeat(${config.n_head}, minmax(0, 1fr))`;
  grid.append(el("div"), ...Array.from({ length: config.n_head }, (_, h) => el("div", { class: "axis" }, `head ${h}`)));
  for (let l = 0; l < config.n_layer; l++) {
    // the layer's label, with a switch for its whole attention and one for its MLP
    grid.append(el("div", { class: "axis layer" }, `layer ${l}`, partSwitch("attention", l, null, "attn"), partSwitch("mlp", l, null, "MLP")));
    thumbs.push([]);
    for (let h = 0; h < config.n_head; h++) {
      const role = headLabel(l, h);
      const face = el("span", { class: "face" });
      const button = el("button", { class: "thumb", "data-layer": l, "data-head": h, "aria-pressed": "false", tabindex: "-1",
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

function markSwitches() {
  markPartSwitches();
  thumbs.forEach((row, l) => row.forEach(({ button }, h) => button.classList.toggle("off", !isOn("head", l, h) || !isOn("attention", l))));
  const off = state.off.heads.length + state.off.attention.length + state.off.mlp.length;
  $("mask-off").checked = state.off.unmasked;
  $("parts-off").textContent = (off ? `${off} part${off > 1 ? "s" : ""} switched off (${state.off.mode === "mean" ? "set to their mean output" : "zeroed"}).` : "") +
    (state.off.unmasked ? `${off ? " " : ""}The causal mask is off: every position reads the later ones too, which the model never learned to do.` : "");
  hide($("all-on"), !off && !state.off.unmasked);
  markHeadOff();
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
        const rgb = j > i && !state.off.unmasked ? FUTURE : viridisRGB(weights[j]);
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

// the large matrix and its worked row say when the head they show is switched off
function markHeadOff() {
  const why = headOff(state.layer, state.head);
  write($("matrix-title"), `Layer ${state.layer}, head ${state.head}${why === "head" ? " (switched off)" : why ? " (its layer's attention is off)" : ""}`);
  $("head").classList.toggle("head-off", Boolean(why));
  $("row").classList.toggle("head-off", Boolean(why));
}

function markSelectedHead() {
  thumbs.forEach((row, l) => row.forEach(({ button }, h) => {
    const on = l === state.layer && h === state.head;
    button.classList.toggle("selected", on);
    button.setAttribute("aria-pressed", String(on));
    button.tabIndex = on ? 0 : -1;
  }));
  const role = headLabel(state.layer, state.head);
  markHeadOff();
  $("head-label").textContent = role ? `Over ${DATA.roles.names}: ${role}.` : "";
  $("step-head-label").textContent = role ? `layer ${state.layer}, head ${state.head}: ${role}` : "";
}

return { buildGrid, buildInput, drawGrid, drawInput, markSelectedHead, markSwitches, section };
})();
