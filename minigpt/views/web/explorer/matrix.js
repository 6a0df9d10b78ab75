// matrix.js: one head, large, as a grid of the largest size cut to the name by hiding. A part of
// the explorer page (state.js lists the parts).

const Matrix = (() => {
const { $, BOUNDARY, D, DATA, N, analyse, charOf, colOf, config, label, roles, rowOf, selectCell, setHover, state,
        switchedOff } = State;
const { diverging, el, fmt, hide, inkOn, reclass, say, textPicture, viridis, write } = Drawing;
const { lossOf, probsOf } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="head" aria-labelledby="matrix-title">
  <h2 id="matrix-title">Layer 0, head 0</h2>
  <p id="head-label" class="muted"></p>
  <div class="toggle" role="radiogroup" aria-label="what the matrix shows">
    <label><input type="radio" name="show" id="show-weights" value="weights" checked> weights (after softmax)</label>
    <label><input type="radio" name="show" id="show-scores" value="scores"> raw scores q·k/√d</label>
  </div>
  <p class="mask-switch"><label><input type="checkbox" id="mask-off"> mask off: every position reads the later ones too</label></p>
  <p id="mask-effect" class="muted" role="status" hidden></p>
  <div class="scale" aria-hidden="true" id="matrix-scale"></div>
  <p class="muted" id="matrix-how"><span class="by-mouse">Click</span><span class="by-touch">Tap</span> a cell, or move with the arrow keys:
  its row is worked out <span class="wide">on the right</span><span class="narrow">below</span>. <span class="by-mouse">Click</span><span class="by-touch">Tap</span> it again to close its details.</p>
  <p class="muted" id="matrix-reading"></p>
  <div id="matrix-room">
    <div class="scroll" id="matrix-box"><div id="big-matrix" class="matrix" role="grid" aria-labelledby="matrix-title"></div></div>
    <div id="cell-info" role="status" hidden></div>
  </div>
  <p id="mask-note" class="note" role="status"></p>
</section>`;

// Rows of fixed height (CELL_H) hold cells of fixed width (CELL_W), side by side in the page's
// flow: no cell is positioned, so none is a layer of its own for the browser to paint. Past the
// name, cells and rows are hidden but keep their place (the stylesheet keeps them in the layout,
// unseen), so that typing lays out no cell. The cells' numbers and colours are painted on one
// canvas under them (text laid out in 256 boxes at every keystroke was most of the browser's
// work); the cells themselves stay, empty and transparent, for the keyboard, the mouse and
// screen readers (each says its number in aria-label).
const matrix = { cols: [], rows: [], heads: [], cells: [], canvas: null, ctx: null, painted: [], shown: [] };
const CELL_W = 27, CELL_H = 21, HEAD_W = 44;
const CELL_FONT = "10.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const CELL_FONT_NARROW = CELL_FONT.replace("10.5px", "9px");

// The worked row sits to the right of the matrix where there is room for both; a long block size makes
// the matrix wide, and then the row goes below it, whole, rather than squeezed into a sliver.
const WORKED_ROW_ROOM = 360, TYPE_COLUMN = 250, GAP = 20; // as explorer.css lays out #lesson
function placeWorkedRow() {
  const needed = TYPE_COLUMN + GAP + (60 + CELL_W * N) + GAP + WORKED_ROW_ROOM;
  $("lesson").classList.toggle("matrix-wide", needed > $("lesson").clientWidth);
}

function buildMatrix() {
  const grid = $("big-matrix");
  document.documentElement.style.setProperty("--positions", N);
  placeWorkedRow();
  window.addEventListener("resize", placeWorkedRow);
  const ratio = window.devicePixelRatio || 1, width = HEAD_W + N * CELL_W, height = (N + 1) * CELL_H;
  matrix.canvas = el("canvas", { class: "paint", width: Math.round(width * ratio), height: Math.round(height * ratio), "aria-hidden": "true" });
  Object.assign(matrix.canvas.style, { width: `${width}px`, height: `${height}px` });
  matrix.ctx = matrix.canvas.getContext("2d");
  matrix.ctx.scale(ratio, ratio);
  grid.append(matrix.canvas);
  const header = el("div", { role: "row" }, el("div", { class: "corner", role: "columnheader" }, "reads ↓", el("br"), "attends →"));
  for (let j = 0; j < N; j++) {
    const head = el("div", { class: "col-head", role: "columnheader" });
    matrix.cols.push(head);
    header.append(head);
  }
  grid.append(header);
  for (let i = 0; i < N; i++) {
    const head = el("div", { class: "row-head", role: "rowheader", title: "work out this row" });
    const row = el("div", { role: "row", "data-i": i }, head);
    const cells = [];
    matrix.painted.push(new Array(N).fill(""));
    for (let j = 0; j < N; j++) {
      const cell = el("div", { class: "cell", role: "gridcell", tabindex: "-1", "data-i": i, "data-j": j });
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
    const [i, j] = cell ? [+cell.dataset.i, +cell.dataset.j] : [null, null];
    if (cell && (j <= i || state.off.unmasked)) clickCell(i, j);
    else if (cell) { // the note is below the matrix, so nothing under the pointer moves
      write($("mask-note"), `Position ${j} comes after position ${i}: the causal mask hides it from row ${i} ` +
      `(its score becomes −∞ before the softmax, so its weight is 0). Tick “mask off” to see what row ${i} would read ` +
      "without it, and what the model predicts when it can read the answer.");
    } else if (head) selectCell(matrix.heads.indexOf(head), null);
  });
  grid.addEventListener("keydown", cellKeys);
  grid.addEventListener("mouseover", (event) => { // a cell of the worked row lights its line of the arithmetic
    const cell = event.target.closest(".cell");
    setHover(cell && +cell.dataset.i === rowOf(state.view) && +cell.dataset.j <= +cell.dataset.i ? +cell.dataset.j : null);
  });
  grid.addEventListener("mouseleave", () => setHover(null));
}

// the cell of the worked row that the pointer is on, here or on its line of the arithmetic
let hovered = null;
function drawHover() {
  if (hovered) hovered.classList.remove("hover");
  hovered = state.hover === null ? null : (matrix.cells[rowOf(state.view)] || [])[state.hover] || null;
  if (hovered) hovered.classList.add("hover");
}

// What learners ask of an attention matrix, answered beside it: which axis is which, why √d, what a head
// is, and how much weight goes to the boundary token (measured on the names the page was written with, with
// the weights shown: a training snapshot's at that step).
function drawMatrixReading(l, h) {
  const shares = roles().shares, even = roles().even;
  const boundary = shares ? ` Over ${DATA.roles.names}, this head puts ${fmt(100 * shares[l][h][0], 0)}% of a row's weight ` +
    `on the boundary token ${BOUNDARY} (an even spread over the positions read would put ${fmt(100 * even[0], 0)}%): the one ` +
    `position every row can read, where a head with nothing to look for can leave its weight.` : "";
  write($("matrix-reading"), `Rows are the positions that read (each one's query q); columns are the positions read ` +
    `(their keys k). Row i spreads one unit of weight over columns 0 to i. Each score q·k is divided by √d with ` +
    `d = ${D}, the head size (n_embd ${config.n_embd} ÷ ${config.n_head} heads), not √${config.n_embd}: a head's q·k adds ` +
    `up d products, and √d keeps the scores' spread near 1 whatever d is. The heads are slices of one projection: ` +
    `head ${h} reads numbers ${h * D} to ${(h + 1) * D - 1} of the q, k and v that W_Q, W_K and W_V make for all heads ` +
    `at once.${boundary}`);
}

// With the mask off, what that does to the name, under its switch: the name's loss and the model's first choice
// after it, with the mask and without (lesson 2 asks; the panels of the loss and the predictions are far below).
// Drawn when the text runs again (the mask's switch runs it), not at every head or cell chosen.
function drawMaskEffect(view = state.view) {
  const T = view.tokens.length;
  hide($("mask-effect"), !state.off.unmasked || T < 2);
  if (!state.off.unmasked || T < 2) return;
  const masked = analyse(view.text, switchedOff({ ...state.off, unmasked: false }));
  const choice = (run) => {
    const p = probsOf(run.steps[T - 1]), t = MiniGPTModel.argmax(p);
    return `${charOf(t)} ${fmt(100 * p[t], 1)}%`;
  };
  write($("mask-effect"), `Loss of “${view.kept.join("")}”: ${fmt(lossOf(masked), 3)} nats per token with the mask, ` +
    `${fmt(lossOf(view), 3)} with it off. After the name, the model's first choice: ${choice(masked)} with the mask, ` +
    `${choice(view)} with it off.`);
}

function drawMatrix() {
  const view = state.view, T = view.tokens.length, { layer: l, head: h } = state;
  drawMatrixReading(l, h);
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
  matrix.shown = []; // the numbers drawn, row by row: minigpt.shown() hands them to the console
  for (let i = 0; i < N; i++) {
    const tr = matrix.rows[i];
    hide(tr, i >= T);
    if (i >= T) continue;
    tr.classList.toggle("worked", i === worked);
    write(matrix.heads[i], labels[i]);
    const at = view.steps[i].layers[l];
    matrix.shown[i] = [];
    matrix.cells[i].forEach((td, j) => {
      hide(td, j >= T);
      if (j >= T) return;
      const future = j > i && !state.off.unmasked; // with the mask off, a row reads the later positions too
      const value = future ? (scores ? -Infinity : 0) : scores ? at.scores[h][j] : at.weights[h][j];
      reclass(td, future ? "cell future" : i === worked && j === chosen ? "cell chosen" : "cell");
      matrix.shown[i][j] = value;
      const text = future ? (scores ? "−∞" : "masked") : scores ? shortScore(value) : shortWeight(value);
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
  const font = text.length >= 4 ? CELL_FONT_NARROW : CELL_FONT; // "−1.9" fits inside the chosen cell's outline
  if (text) ctx.drawImage(textPicture(text, ink, font, CELL_W, CELL_H), x, y, CELL_W, CELL_H);
}

// a weight in the room of a cell: ".43", and "1" for a whole row's weight
const shortWeight = (w) => (w >= 0.995 ? "1" : w.toFixed(2).slice(1));
// a raw score in the room of a cell (at most four characters): "−1.9", "−.4", "13", "−13"
function shortScore(x) {
  if (Math.abs(x) >= 9.95) return fmt(x, 0);
  const text = fmt(x, 1);
  return text.replace(/^(−?)0\./, "$1.");
}

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
  const scores = at.scores[h], max = MiniGPTModel.maxOf(scores), total = scores.reduce((a, s) => a + Math.exp(s - max), 0);
  const labels = view.tokens.map(label);
  box.textContent = `Position ${i} “${labels[i]}” attends to position ${j} “${labels[j]}”: ` +
    `q·k${j} = ${fmt(scores[j] * Math.sqrt(D))}, ÷ √${D} = ${fmt(scores[j])}, + mask 0, ` +
    `e^(${fmt(scores[j])} − ${fmt(max)}) = ${fmt(Math.exp(scores[j] - max))}, ÷ ${fmt(total)} = weight ${fmt(at.weights[h][j], 4)}.`;
}

return { buildMatrix, drawHover, drawMaskEffect, drawMatrix, matrix, section };
})();
