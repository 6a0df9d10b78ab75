// pair.js: two models on one page (minigpt/views/pair_page.py writes it). Both run through model.js on
// the name typed; every panel shows the same layer, head and row of both, and what differs between them.
// One state, written by the controls and the address, and one update() that shows it; its colours, ink and
// writes are the explorer's (paint.js, put before this file).
"use strict";

const Pair = (() => {
const DATA = JSON.parse(document.getElementById("minigpt-data").textContent);
const vocab = DATA.vocab, BOS = vocab.length, BOUNDARY = DATA.boundary;
const ids = new Map(vocab.map((ch, i) => [ch, i]));
const $ = (id) => document.getElementById(id);
const { diverging, divergingRGB, el, hide, inkOn, readableOn, viridis, viridisRGB, write } = Paint; // the explorer's own
const label = (token) => (token === BOS ? BOUNDARY : vocab[token]);

// the two models: each one's carried data, its checkpoint weights, and its snapshots decoded once
const sides = ["a", "b"].map((key) => {
  const data = DATA[key];
  return { key, data, config: data.config.model, final: MiniGPTModel.load(data), decoded: new Map() };
});
const [A, B] = sides;
// a model trained without the causal mask (model.causal = false) reads every position of the name
const readsOf = (side) => (side.config.causal === false ? (t, T) => T : null);
const layers = Math.max(A.config.n_layer, B.config.n_layer), heads = Math.max(A.config.n_head, B.config.n_head);
const longest = Math.min(A.config.block_size, B.config.block_size); // positions both can read
const bothSnapshots = Boolean(A.data.snapshots && B.data.snapshots);

// the page's one state: the name, a head, a row (null: the last), the snapshot index on the slider (of A's
// steps; null: the checkpoints), and both models' runs on the name
const state = { name: "", layer: 0, head: 0, row: null, step: null, runs: null, rolesAt: undefined };

// ---- the models at the step shown ----------------------------------------------------------------

// the side's snapshot nearest A's step at `index`, or null for its checkpoint's own weights
function snapshotOf(side, index) {
  if (index === null) return null;
  const snaps = side.data.snapshots, step = A.data.snapshots.steps[index];
  let best = 0;
  snaps.steps.forEach((s, i) => { if (Math.abs(s - step) < Math.abs(snaps.steps[best] - step)) best = i; });
  const exact = snaps.steps[best] === snaps.checkpoint_step && best === snaps.steps.lastIndexOf(snaps.checkpoint_step);
  return exact ? null : best;
}

function modelOf(side) {
  const index = snapshotOf(side, state.step);
  if (index === null) return side.final;
  if (!side.decoded.has(index)) side.decoded.set(index, MiniGPTModel.loadSnapshot(side.config, side.data.snapshots, index));
  return side.decoded.get(index);
}

function stepOf(side) {
  const index = snapshotOf(side, state.step);
  return index === null ? side.data.card.step : side.data.snapshots.steps[index];
}

function rolesOf(side) {
  const index = snapshotOf(side, state.step), at = index === null ? null : side.data.snapshots.roles[index];
  return at ? { ...side.data.roles, ...at } : side.data.roles;
}

// ---- reading the name ----------------------------------------------------------------------------

// What both read: the boundary token, then each known character, at most `longest` positions. The targets
// are what comes next at each position: the next character, and the boundary after the last (none when cut).
function readName(text) {
  const kept = [], skipped = new Set();
  let cut = 0;
  for (const ch of text) {
    if (!ids.has(ch)) skipped.add(ch);
    else if (kept.length < longest - 1) kept.push(ch);
    else cut += 1;
  }
  const tokens = [BOS, ...kept.map((ch) => ids.get(ch))];
  const targets = [...tokens.slice(1), cut ? null : BOS];
  return { kept, skipped: [...skipped], cut, tokens, targets };
}

// One model's run: per position its attention ([layer][head][key] weights), its probabilities of the next
// token, and its loss on the target there
// (the positions the side's last run shares with this one, same weights and tokens up to there, are not
// computed again: typing at the end of a name runs one position of a causal model)
function run(side, read) {
  const model = modelOf(side), last = side.last;
  let shared = 0;
  if (last && last.model === model && !readsOf(side)) {
    while (shared < read.tokens.length && last.tokens[shared] === read.tokens[shared]) shared++;
  }
  const steps = MiniGPTModel.forward(model, read.tokens, { reads: readsOf(side), known: shared ? last.steps.slice(0, shared) : [] });
  side.last = { model, tokens: read.tokens, steps };
  return steps.map((s, t) => {
    if (!derived.has(s)) { // a position computed once is read once: its probabilities and weights kept with it
      const logits = Array.from(s.logits);
      derived.set(s, { logits, probs: MiniGPTModel.softmax(logits), weights: s.layers.map((layer) => layer.weights) });
    }
    const { logits, probs, weights } = derived.get(s), target = read.targets[t];
    return { logits, probs, weights, loss: target === null ? null : -Math.log(probs[target]) };
  });
}
const derived = new WeakMap(); // a forward pass's position -> what the page reads of it

const meanLoss = (steps) => {
  const losses = steps.map((s) => s.loss).filter((x) => x !== null);
  return losses.reduce((a, b) => a + b, 0) / losses.length;
};

// how far apart two rows of weights are: half their summed difference (0: the same, 1: nothing in common)
function apart(p, q) {
  let sum = 0;
  for (let i = 0; i < Math.max(p.length, q.length); i++) sum += Math.abs((p[i] || 0) - (q[i] || 0));
  return sum / 2;
}

// a head's rows as a T x T matrix (0 where the mask hides a key)
// (made once for each run and head: the squares, their distances and the large maps all read them)
const madeMaps = new WeakMap();
function mapOf(steps, l, h) {
  if (!madeMaps.has(steps)) madeMaps.set(steps, new Map());
  const made = madeMaps.get(steps), key = `${l}.${h}`, T = steps.length;
  if (!made.has(key)) {
    made.set(key, steps.map((s) => {
      const w = s.weights[l] && s.weights[l][h], row = new Array(T);
      for (let j = 0; j < T; j++) row[j] = w ? w[j] || 0 : NaN;
      return row;
    }));
  }
  return made.get(key);
}

function headDistance(l, h) {
  const [a, b] = state.runs.map((steps) => mapOf(steps, l, h));
  if (a[0].some(Number.isNaN) || b[0].some(Number.isNaN)) return null; // a head only one model has
  return a.reduce((sum, row, i) => sum + apart(row, b[i]), 0) / a.length;
}

// ---- drawing ------------------------------------------------------------------------------------

const fixed = (x, digits = 2) => (x === null || Number.isNaN(x) ? "–" : x.toFixed(digits));
const rowOf = () => (state.row !== null && state.row < state.runs[0].length ? state.row : state.runs[0].length - 1);

function drawCards() {
  for (const side of sides) {
    const c = side.data.card, name = side.key.toUpperCase();
    $(`card-${side.key}-title`).textContent = `${name}: ${side.data.run}`;
    const mask = side.config.causal === false ? " Trained without the causal mask: every position reads the whole name." : "";
    $(`card-${side.key}`).querySelector(".card").textContent =
      `${c.parameters.toLocaleString("en")} parameters, step ${c.step}, best validation loss ${fixed(c.best_val_loss, 4)}; ` +
      `${c.data}.${mask}`;
  }
  const keys = Object.entries(DATA.differences);
  $("differences").textContent = DATA.identical
    ? "The two runs are the same run: identical weights (the same recipe, seed and names), so every difference below is 0."
    : keys.length
    ? `B's recipe differs from A's in ${keys.map(([key, [a, b]]) => `${key} ${JSON.stringify(a)} → ${JSON.stringify(b)}`).join(", ")}.`
    : DATA.same_names
    ? "The two recipes are the same, seed included, and so are the names; the weights differ (another machine or number of threads sums floats in another order)."
    : "The two recipes are the same, seed included; the runs trained on other names.";
}

function drawReading(read) {
  const notes = [];
  if (read.skipped.length) notes.push(`Neither model knows ${read.skipped.map((ch) => `“${ch}”`).join(", ")}: skipped.`);
  if (read.cut) notes.push(`Both read at most ${longest - 1} characters: the last ${read.cut} are cut.`);
  $("read").textContent = notes.join(" ");
  const [a, b] = state.runs.map(meanLoss);
  $("losses").textContent = `Loss on “${read.kept.join("")}”: A ${fixed(a, 4)}, B ${fixed(b, 4)} nats a character ` +
    `(${a < b ? "A" : b < a ? "B" : "neither"} finds it easier).`;
  if (bothSnapshots) $("step-value").textContent = `A at step ${stepOf(A)}, B at step ${stepOf(B)}`;
}

// With one model trained without the mask: the two side by side, in the numbers that show what the mask is for
function drawMask(read) {
  const unmasked = sides.map((side) => side.config.causal === false);
  $("mask-section").hidden = unmasked[0] === unmasked[1];
  if (unmasked[0] === unmasked[1]) return;
  const lastTrain = (side) => (side.data.curve && side.data.curve.train.length ? side.data.curve.train.at(-1)[1] : null);
  // the share of a row's weight on positions after its own, over every row but the last (which has no later
  // position to read): for each head, and averaged over every head and layer
  const aheadByHead = (steps) => steps[0].weights.map((layer, l) => layer.map((_, h) => {
    const rows = steps.slice(0, -1).map((s, i) => s.weights[l][h].slice(i + 1).reduce((a, b) => a + b, 0));
    return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : 0;
  }));
  const ahead = (steps) => {
    const shares = aheadByHead(steps).flat();
    return shares.reduce((a, b) => a + b, 0) / shares.length;
  };
  // the heads over half, and the closest under it with its number: a head at 49.6% shows as 50% and was left
  // out without a word
  const readers = (steps) => {
    const heads = aheadByHead(steps).flatMap((layer, l) => layer.map((share, h) => [`${l}.${h}`, share]))
      .sort((x, y) => y[1] - x[1]);
    const shown = ([head, share]) => `${head} ${fixed(100 * share, 1)}%`;
    const over = heads.filter(([, share]) => share > 0.5), next = heads.find(([, share]) => share <= 0.5);
    return (over.map(shown).join(", ") || "none") + (next ? ` (the next, under half: ${shown(next)})` : "");
  };
  const rows = [["trained with the mask", unmasked.map((u) => (u ? "no" : "yes"))],
    ["training loss at the end", sides.map((side) => fixed(lastTrain(side), 4))],
    ["best validation loss", sides.map((side) => fixed(side.data.card.best_val_loss, 4))],
    [`loss on “${read.kept.join("")}”`, state.runs.map((steps) => fixed(meanLoss(steps), 4))],
    ["weight on later positions (every row but the last, which has none)",
      state.runs.map((steps) => `${fixed(100 * ahead(steps), 1)}%`)],
    ["heads that read ahead (over half a row's weight on later positions)", state.runs.map(readers)],
    ["names it generates", sides.map((side) => side.data.samples.join(", "))]];
  const table = $("mask-table");
  if (!table.rows.length) { // built once; a key writes its numbers into it
    table.append(el("tr", {}, ...["", `A: ${A.data.run}`, `B: ${B.data.run}`].map((text) => el("th", { scope: "col" }, text))),
      ...rows.map(() => el("tr", {}, el("th", { scope: "row" }), el("td"), el("td"))));
  }
  rows.forEach(([name, values], k) => [name, ...values].forEach((text, n) => write(table.rows[k + 1].cells[n], text)));
}

// A head's two squares, A's and B's, a pixel a cell with a column between them, their colours the maps'
// (WEIGHTS_PALETTE): every head's pair on one sheet, a strip of T rows each, made into one picture that each
// button shows its strip of (the stylesheet scales it up, unsmoothed). One picture, not a canvas a head:
// the browser hands every canvas on the page to its compositor again with each frame, a picture once.
const sheet = document.createElement("canvas");
function drawPairs(pictures) {
  const T = state.runs[0].length, W = 2 * T + 1, ctx = sheet.getContext("2d");
  if (sheet.width !== W || sheet.height !== T * pictures.length) {
    Object.assign(sheet, { width: W, height: T * pictures.length });
    sheet.image = ctx.createImageData(W, T * pictures.length);
  }
  const data = sheet.image.data;
  data.fill(0);
  pictures.forEach(({ l, h }, n) => state.runs.forEach((steps, side) => {
    const map = mapOf(steps, l, h);
    if (map[0].some(Number.isNaN)) return; // a head only the other model has
    map.forEach((row, i) => row.forEach((w, j) => {
      const [r, g, b] = weightFill(w).rgb;
      const at = 4 * ((n * T + i) * W + side * (T + 1) + j);
      data[at] = r, data[at + 1] = g, data[at + 2] = b, data[at + 3] = 255;
    }));
  }));
  ctx.putImageData(sheet.image, 0, 0);
  const url = `url(${sheet.toDataURL()})`, count = pictures.length;
  pictures.forEach(({ picture }, n) => Object.assign(picture.style, {
    backgroundImage: url, backgroundSize: `100% ${100 * count}%`,
    backgroundPosition: `0 ${count > 1 ? (100 * n) / (count - 1) : 0}%`,
  }));
}

function drawHeads() {
  const box = $("heads");
  if (!box.childElementCount) { // built once: a row of buttons a layer
    for (let l = 0; l < layers; l++) {
      const row = el("div", { class: "layer-row" }, el("span", {}, `layer ${l}`));
      for (let h = 0; h < heads; h++) {
        const button = el("button", { type: "button", class: "pair-head" }, el("span", { class: "pair-picture" }), el("span"));
        button.dataset.layer = l;
        button.dataset.head = h;
        button.addEventListener("click", () => { Object.assign(state, { layer: l, head: h }); update(true); });
        row.append(button);
      }
      box.append(row);
    }
  }
  const [rolesA, rolesB] = [rolesOf(A), rolesOf(B)], buttons = [...box.querySelectorAll("button")];
  drawPairs(buttons.map((button) => ({ picture: button.firstChild, l: +button.dataset.layer, h: +button.dataset.head })));
  for (const button of buttons) {
    const l = +button.dataset.layer, h = +button.dataset.head, distance = headDistance(l, h);
    write(button.lastChild, `${l}.${h} · ${fixed(distance)}`);
    const roleText = (side, roles) => (side.config.causal === false ? "trained without the mask"
      : (roles.labels && roles.labels[l] && roles.labels[l][h]) || "not in this model");
    const said = `layer ${l} head ${h}: A ${roleText(A, rolesA)}, B ${roleText(B, rolesB)}; rows apart ${fixed(distance)}`;
    if (button.getAttribute("aria-label") !== said) button.setAttribute("aria-label", said);
    pressed(button, l === state.layer && h === state.head);
  }
}

// What never changes is built once, at the longest name both read (the maps' cells, the positions' rows);
// a redraw writes numbers and colours into it, and hides what the current name does not use: a key
// redraws a few hundred cells' text and colour, and the browser lays out nothing new.
const seen = (node, on) => { const v = on ? "" : "hidden"; if (node.style.visibility !== v) node.style.visibility = v; };
const pressed = (node, on) => { if (node.getAttribute("aria-pressed") !== String(on)) node.setAttribute("aria-pressed", String(on)); };

function pickRow(i) {
  state.row = i === state.runs[0].length - 1 ? null : i;
  update(true);
}

// A map is painted on a canvas (its letters, cells and numbers), beside a column of buttons, a row each, that
// pick the row; what a screen reader hears is the picked row's numbers, in a line of text. Painting a canvas
// again costs the browser a picture, where hundreds of cells of text would cost it each cell's text.
const CELL_W = 26, CELL_H = 22;
function buildMap(holder) {
  const n = holder.childElementCount, title = el("p", { class: "map-title", id: `map-${n}` });
  const buttons = el("div", { class: "map-rows" }, el("span"));
  const rows = Array.from({ length: longest }, (_, i) => {
    const button = el("button", { type: "button" });
    button.addEventListener("click", () => pickRow(i));
    buttons.append(button);
    return button;
  });
  const canvas = el("canvas", { class: "map-picture" });
  canvas.setAttribute("aria-hidden", "true");
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(CELL_W * longest * ratio);
  canvas.height = Math.round(CELL_H * (longest + 1) * ratio);
  Object.assign(canvas.style, { width: `${CELL_W * longest}px`, height: `${CELL_H * (longest + 1)}px` });
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  const said = el("p", { class: "visually-hidden" });
  const grid = el("div", { class: "map-grid" }, buttons, canvas);
  const scroll = el("div", { class: "scroll map-box", tabindex: "0" }, grid);
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-labelledby", title.id);
  holder.append(el("div", {}, title, scroll, said));
  return { title, rows, ctx, said, grid, numbers: [] };
}

// Each cell is painted only when what it shows changed (typing at the end of a name changes the last row
// and column): `map.painted` keeps what each cell and heading shows.
function drawMap(map, title, matrix, tokens, colour, format) {
  write(map.title, title);
  const T = tokens.length, row = rowOf(), ctx = map.ctx;
  if (map.grid.style.getPropertyValue("--rows") !== String(T)) map.grid.style.setProperty("--rows", String(T));
  if (!map.painted) map.painted = { heads: [], cells: Array.from({ length: longest }, () => []), row: null };
  const painted = map.painted;
  ctx.font = "10px ui-monospace, Menlo, Consolas, monospace";
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let j = 0; j < longest; j++) { // the letters over the columns
    const text = j < T ? label(tokens[j]) : "";
    if (painted.heads[j] === text) continue;
    ctx.clearRect(j * CELL_W, 0, CELL_W, CELL_H);
    ctx.fillStyle = "#1d1d27";
    ctx.fillText(text, (j + 0.5) * CELL_W, CELL_H / 2);
    painted.heads[j] = text;
  }
  if (painted.row !== null && painted.row !== row) painted.cells[painted.row] = []; // its outline goes: paint it again
  map.numbers = [];
  for (let i = 0; i < longest; i++) {
    const numbers = [];
    for (let j = 0; j < longest; j++) {
      const x = i < T && j < T ? matrix[i][j] : NaN, fill = Number.isNaN(x) ? null : colour(x);
      const text = fill ? format(x) : "", key = fill ? `${text}|${fill.css}` : "";
      if (i < T && j < T) numbers.push(text);
      if (painted.cells[i][j] === key) continue;
      ctx.clearRect(j * CELL_W, (i + 1) * CELL_H, CELL_W, CELL_H);
      if (fill) {
        ctx.fillStyle = fill.css;
        ctx.fillRect(j * CELL_W, (i + 1) * CELL_H, CELL_W, CELL_H);
        ctx.fillStyle = fill.ink;
        ctx.fillText(text, (j + 0.5) * CELL_W, (i + 1.5) * CELL_H);
      }
      painted.cells[i][j] = key;
    }
    if (i < T) map.numbers.push(numbers);
  }
  ctx.strokeStyle = "#d9480f";
  ctx.lineWidth = 2;
  ctx.strokeRect(1, (row + 1) * CELL_H + 1, T * CELL_W - 2, CELL_H - 2); // the picked row
  painted.cells[row] = []; // its outline is over its cells: they are painted again next time
  painted.row = row;
  map.rows.forEach((button, i) => {
    seen(button, i < T);
    write(button, i < T ? `${i} ${label(tokens[i])}` : "");
    pressed(button, i === row);
  });
  write(map.said, `${title}, row ${row} (${label(tokens[row])}): ` +
    map.numbers[row].map((text, j) => `${text || "none"} on ${j} ${label(tokens[j])}`).join(", "));
}

// the maps' colours, the explorer's, 256 of each made once: a colour, as CSS, and the ink that reads on it
const WEIGHTS_PALETTE = Array.from({ length: 256 }, (_, k) => ({ rgb: viridisRGB(k / 255), css: viridis(k / 255), ink: inkOn(k / 255) }));
const DIFFERENCE_PALETTE = Array.from({ length: 256 }, (_, k) => {
  const d = (2 * k) / 255 - 1;
  return { rgb: divergingRGB(d, 1), css: diverging(d, 1), ink: readableOn(divergingRGB(d, 1)) };
});
const byte = (x) => Math.round(Math.min(Math.max(x, 0), 1) * 255);
const weightFill = (w) => WEIGHTS_PALETTE[byte(w)], differenceFill = (d) => DIFFERENCE_PALETTE[byte((d + 1) / 2)];

const maps = [];
function drawMaps(read) {
  if (!maps.length) maps.push(...[0, 1, 2].map(() => buildMap($("maps"))));
  const { layer: l, head: h } = state, [a, b] = state.runs.map((steps) => mapOf(steps, l, h));
  const both = !a[0].some(Number.isNaN) && !b[0].some(Number.isNaN);
  const difference = a.map((row, i) => row.map((x, j) => (both ? b[i][j] - x : NaN)));
  write($("maps-title"), `Layer ${l}, head ${h}: A, B, and B − A`);
  const percent = (x) => String(Math.round(x * 100));
  const signed = (x) => (Math.round(x * 100) === 0 ? "0" : `${x > 0 ? "+" : "−"}${Math.abs(Math.round(x * 100))}`);
  drawMap(maps[0], "A: weights in percent", a, read.tokens, weightFill, percent);
  drawMap(maps[1], "B: weights in percent", b, read.tokens, weightFill, percent);
  drawMap(maps[2], "B − A, in points", difference, read.tokens, differenceFill, signed);
}

const positions = [], bars = [];
function buildNext() {
  const table = $("positions");
  table.append(el("tr", {}, ...["position", "next", "p A", "p B", "loss A", "loss B", "apart"]
    .map((text) => el("th", { scope: "col" }, text))));
  for (let t = 0; t < longest; t++) {
    const button = el("button", { type: "button" });
    button.addEventListener("click", () => pickRow(t));
    const cells = Array.from({ length: 6 }, () => el("td"));
    const tr = el("tr", {}, el("th", { scope: "row" }, button), ...cells);
    positions.push({ tr, button, cells });
    table.append(tr);
  }
  $("row-bars").append(el("tr", {}, ...["next", "A", "", "B", ""].map((text) => el("th", { scope: "col" }, text))));
  for (let k = 0; k < Math.min(8, vocab.length + 1); k++) {
    const cells = [el("td"), el("td"), el("td", {}, el("span", { class: "bar a" })),
                   el("td"), el("td", {}, el("span", { class: "bar b" }))];
    bars.push(cells);
    $("row-bars").append(el("tr", {}, ...cells));
  }
}

function drawNext(read) {
  if (!positions.length) buildNext();
  const [a, b] = state.runs, T = read.tokens.length;
  const gaps = a.map((s, t) => apart(s.probs, b[t].probs));
  const most = gaps.indexOf(Math.max(...gaps)), likeliest = (s) => MiniGPTModel.argmax(s.probs);
  const guess = (s) => `“${label(likeliest(s))}” (${fixed(s.probs[likeliest(s)])})`;
  const before = read.kept.slice(0, most).join("") || BOUNDARY;  // position 0 has read the boundary alone
  write($("disagree"), gaps[most] < 5e-3  // 0.00 apart, as shown: no position to name
    ? `They agree at every position: A and B expect the same characters here (distributions at most ` +
      `${fixed(gaps[most])} apart).`
    : `They disagree most at position ${most}, after “${before}”: ` +
      `A expects ${guess(a[most])}, B expects ${guess(b[most])} (distributions ${fixed(gaps[most])} apart).`);
  positions.forEach(({ tr, button, cells }, t) => {
    hide(tr, t >= T);
    if (t >= T) return;
    const target = read.targets[t], p = (s) => (target === null ? "–" : fixed(s.probs[target], 3));
    write(button, `${t} ${label(read.tokens[t])}`);
    tr.classList.toggle("selected", t === rowOf());
    tr.classList.toggle("most", t === most);
    [target === null ? "(cut)" : label(target), p(a[t]), p(b[t]), fixed(a[t].loss, 3), fixed(b[t].loss, 3), fixed(gaps[t])]
      .forEach((text, k) => write(cells[k], text));
  });
  const i = rowOf(), likelier = (t) => Math.max(a[i].probs[t], b[i].probs[t]); // as likely as either model finds it
  const order = [...a[i].probs.keys()].sort((x, y) => likelier(y) - likelier(x));
  write($("row-title"), `After “${read.kept.slice(0, i).join("")}” (position ${i}): the likeliest next characters`);
  bars.forEach((cells, k) => {
    const token = order[k], pa = a[i].probs[token], pb = b[i].probs[token];
    write(cells[0], label(token));
    write(cells[1], fixed(pa, 3));
    cells[2].firstChild.style.width = `${Math.round(pa * 120)}px`;
    write(cells[3], fixed(pb, 3));
    cells[4].firstChild.style.width = `${Math.round(pb * 120)}px`;
  });
}

function drawNames() {
  const { names, a, b, what } = DATA.names;
  if (!names.length) {
    $("names-summary").textContent = `No names are compared: ${what}.`;
    return;
  }
  const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const order = names.map((_, i) => i).sort((i, j) => (b[j] - a[j]) - (b[i] - a[i]));
  const count = (n) => n.toLocaleString("en");
  const aWins = names.filter((_, i) => a[i] < b[i]).length, bWins = names.filter((_, i) => b[i] < a[i]).length;
  const ties = names.length - aWins - bWins;  // an equal loss is neither side's
  $("names-summary").textContent = `On ${count(names.length)} of ${what}: a name's loss is A's ${fixed(mean(a), 4)} ` +
    `and B's ${fixed(mean(b), 4)} on average (each name counted once); A is better on ${count(aWins)} of them, ` +
    `B on ${count(bWins)}${ties ? `, and ${count(ties)} are ties` : ""}. Each side is one run: a difference no larger ` +
    `than the spread between seeds of one recipe is seed noise, which minigpt compare measures over several seeds. ` +
    `Pick a name to read it in both.`;
  const list = (indices) => indices.map((i) => {
    const button = el("button", { type: "button" }, names[i]);
    button.addEventListener("click", () => setName(names[i]));
    return el("li", {}, button, ` A ${fixed(a[i], 3)}, B ${fixed(b[i], 3)}`);
  });
  const none = (other) => [el("li", {}, `none: ${other} does at least as well on every name`)];
  const forA = order.slice(0, 8).filter((i) => b[i] > a[i]), forB = order.slice(-8).reverse().filter((i) => a[i] > b[i]);
  $("easier-a").replaceChildren(...(forA.length ? list(forA) : none("B")));
  $("easier-b").replaceChildren(...(forB.length ? list(forB) : none("A")));
}

// Each of A's heads and the head of B that does most nearly what it does (their shares of weight by how
// far back they look, measured over the validation names): the closest pairs are taken first, each head once.
function matchedHeads() {
  const [ra, rb] = [rolesOf(A), rolesOf(B)];
  if (!ra.shares || !rb.shares) return [];
  const pairs = [];
  ra.shares.forEach((row, la) => row.forEach((sa, ha) => rb.shares.forEach((rowB, lb) => rowB.forEach((sb, hb) => {
    pairs.push({ la, ha, lb, hb, distance: sa.reduce((s, x, k) => s + Math.abs(x - sb[k]), 0) / 2 });
  }))));
  pairs.sort((x, y) => x.distance - y.distance);
  const usedA = new Set(), usedB = new Set(), matched = [];
  for (const p of pairs) {
    if (usedA.has(`${p.la}.${p.ha}`) || usedB.has(`${p.lb}.${p.hb}`)) continue;
    usedA.add(`${p.la}.${p.ha}`), usedB.add(`${p.lb}.${p.hb}`);
    matched.push({ ...p, labelA: ra.labels[p.la][p.ha], labelB: rb.labels[p.lb][p.hb] });
  }
  return matched.sort((x, y) => x.la - y.la || x.ha - y.ha);
}

function drawRoles() {
  const matched = matchedHeads();
  $("roles-note").textContent = matched.length
    ? `Measured on ${rolesOf(A).names} (A) and ${rolesOf(B).names} (B), at the steps shown. A pair's distance is half ` +
      `the summed difference of their shares of weight on the boundary, itself, 1, 2 and 3 or more back.`
    : sides.some((side) => side.config.causal === false)
      ? "A head's role is measured under the causal mask, and a model trained without it has none to match."
      : "The head descriptions need validation or training names, and one of the runs has none.";
  $("roles").hidden = !matched.length;
  $("roles").replaceChildren(el("tr", {}, ...["A's head", "what it does", "B's head", "what it does", "distance"]
    .map((text) => el("th", { scope: "col" }, text))),
    ...matched.map((m) => el("tr", {}, ...[`${m.la}.${m.ha}`, m.labelA, `${m.lb}.${m.hb}`, m.labelB, fixed(m.distance)]
      .map((text) => el("td", {}, text)))));
}

// ---- the address: the view, to link to (the explorer's keys: name, layer, head, row, step) ---------

function writeAddress(push) {
  const view = new URLSearchParams({ name: state.name, layer: state.layer, head: state.head });
  if (state.row !== null) view.set("row", state.row);
  if (state.step !== null) view.set("step", A.data.snapshots.steps[state.step]);
  const address = `#${view}`;
  if (address === location.hash) return;
  try { history[push && location.hash ? "pushState" : "replaceState"](null, "", address); } catch (error) { /* unlinked */ }
}

function readAddress() {
  const view = new URLSearchParams(location.hash.replace(/^#/, ""));
  const whole = (key, below) => {
    const n = Number(view.get(key));
    return view.has(key) && view.get(key) !== "" && Number.isInteger(n) && n >= 0 && n < below ? n : null;
  };
  state.name = view.has("name") ? view.get("name") : DATA.start_text;
  const layer = whole("layer", layers), head = whole("head", heads);
  if (layer !== null && head !== null) Object.assign(state, { layer, head });
  state.row = whole("row", longest);
  const step = bothSnapshots && view.has("step") ? A.data.snapshots.steps.indexOf(Number(view.get("step"))) : -1;
  state.step = step >= 0 ? step : null;
  $("name-input").value = state.name;
  if (bothSnapshots) $("step-slider").value = state.step === null ? A.data.snapshots.steps.length - 1 : state.step;
}

// ---- the page -------------------------------------------------------------------------------------

function update(push = false) {
  const read = readName(state.name);
  state.runs = [run(A, read), run(B, read)];
  drawReading(read);
  drawMask(read);
  drawMaps(read);
  headsSoon();
  drawNextWhenSeen();
  if (state.rolesAt !== state.step) drawRoles(); // the roles do not depend on the name
  state.rolesAt = state.step;
  addressSoon(push);
}

// `work` once the next frame is made (a frame's callback, then a task after it)
const afterFrame = (work) => requestAnimationFrame(() => setTimeout(work));

// The squares of every head follow in the frame after the one that shows the name and the maps: a key's own
// frame holds what was typed and the head looked at, and several keys before the next frame are one redraw.
let headsPending = false;
function headsSoon() {
  if (headsPending) return;
  headsPending = true;
  afterFrame(() => { headsPending = false; drawHeads(); });
}

// The address is written after the frame that shows the view (writing history takes a few milliseconds a
// key); several changes before it are one write, which adds a history entry if any of them would.
let addressPending = null;
function addressSoon(push) {
  if (addressPending !== null) {
    addressPending = addressPending || push;
    return;
  }
  addressPending = push;
  afterFrame(() => {
    const adds = addressPending;
    addressPending = null;
    writeAddress(adds);
  });
}

// The next characters' panel, below the first screen, is drawn when it is in sight (and marked aria-busy
// until then): a key redraws what can be seen.
const nextPanel = { seen: false, stale: true };
function drawNextWhenSeen() {
  nextPanel.stale = !nextPanel.seen;
  if (nextPanel.seen) drawNext(readName(state.name));
  $("next-section").setAttribute("aria-busy", String(nextPanel.stale));
}
new IntersectionObserver(([entry]) => {
  nextPanel.seen = entry.isIntersecting;
  if (nextPanel.seen && nextPanel.stale && state.runs) drawNextWhenSeen();
}).observe($("next-section"));

function setName(name) {
  state.name = $("name-input").value = name;
  state.row = null;
  update(true);
}

// The page checks itself against torch as it opens (model.js's disagreement): where either model's logits differ
// from torch's, every number the page would draw is wrong, and one paragraph says so in place of the panels.
function disagreeing() {
  const checks = sides.map((s) => s.data.torch_check && MiniGPTModel.disagreement(s.final, s.data.torch_check));
  const at = checks.findIndex(Boolean);
  if (at < 0) return false;
  const side = sides[at], { text, worst } = checks[at];
  const said = el("p", { id: "torch-check", role: "alert" }, `This page does not agree with torch, so it shows ` +
    `none of its numbers: for “${text}” the logits its JavaScript (model.js) computes for ${side.key.toUpperCase()} ` +
    `(${side.data.run}) differ from those torch computed by up to ` +
    `${Number.isFinite(worst) ? worst.toPrecision(3) : "a number that is not finite"} (they agree to 0.001 when ` +
    `both compute one model). The code that trained it computes something model.js does not (a changed core?): ` +
    `teach model.js the change, beside model.py, and write the page again.`);
  document.querySelector("main").replaceChildren(said);
  return true;
}

function start() {
  document.documentElement.style.setProperty("--longest", longest);
  drawCards();
  if (disagreeing()) return;
  if (bothSnapshots) {
    const slider = $("step-slider");
    slider.max = A.data.snapshots.steps.length - 1;
    $("training-steps").hidden = false;
    slider.addEventListener("input", () => {
      const index = +slider.value, last = A.data.snapshots.steps.length - 1;
      state.step = index === last && A.data.snapshots.steps[last] === A.data.snapshots.checkpoint_step ? null : index;
      update();
    });
  }
  $("name-input").addEventListener("input", (event) => { state.name = event.target.value; state.row = null; update(); });
  window.addEventListener("popstate", () => { readAddress(); update(); });
  readAddress();
  drawNames();
  update();
}

// the console's view of the page, and the tests': both models' run on a text
// the numbers each map shows now, row by row (the tests read them)
const shownMaps = () => maps.map((map) => map.numbers);

function forward(text) {
  const read = readName(text);
  const one = (side) => run(side, read).map(({ logits, weights, loss }) => ({ logits, weights, loss }));
  return { tokens: read.tokens, a: one(A), b: one(B) };
}

start();
return { forward, matchedHeads, shownMaps, state };
})();
const minigpt = { forward: Pair.forward, matchedHeads: Pair.matchedHeads, shownMaps: Pair.shownMaps };
