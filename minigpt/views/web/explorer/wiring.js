// wiring.js: what redraws when, the events, the start, and the console API. A part of the
// explorer page (state.js lists the parts).

// Parts below the first screen are drawn when they are on screen (or near it): a keystroke
// that redraws only what can be seen leaves the browser less to lay out. A part that changed
// while out of sight is drawn as it comes into view.
// The panels below the first screen (a part file each), and what makes each redraw: "text" (the name or
// the parts switched off changed, so the model ran again), "selection" (the head, the row or the cell),
// "row" (the row or the cell alone), "filters" (the sampling sliders). A new panel is its part file and
// one line here; render(), drawSelection(), selectCell() and the sliders loop over this list.
const PANELS = [
  { id: "flow", draw: () => drawFlow(), on: ["selection"] },
  { id: "walk", draw: () => drawWalk(), on: ["selection", "filters"] },
  { id: "predict", draw: () => drawPredictions(), on: ["text", "row", "filters"] },
  { id: "why", draw: () => drawWhy(), on: ["text", "row"] },
  { id: "units", draw: () => drawUnits(), on: ["text", "row"] },
  { id: "patch", draw: () => drawPatch(), on: ["text"] },
  { id: "ablation", draw: () => drawLiveCosts(), on: ["text"] },
  { id: "lens", draw: () => drawLens(), on: ["text"] },
  { id: "cache", draw: () => drawCache(), on: ["selection"] }, // render() draws the selection too
];
const offscreen = Object.fromEntries(PANELS.map(({ id, draw }) => [id, { draw, seen: false, stale: true }]));
const redrawPanels = (change) => PANELS.forEach(({ id, on }) => { if (on.includes(change)) redrawIfSeen(offscreen[id]); });
// A part not yet redrawn says so as a screen reader hears it: its section is aria-busy until it is drawn.
for (const [id, part] of Object.entries(offscreen)) part.section = $(id);
function markStale(part, stale) {
  part.stale = stale;
  part.section.setAttribute("aria-busy", String(stale));
}
Object.values(offscreen).forEach((part) => markStale(part, true));

const watcher = new IntersectionObserver((entries) => entries.forEach((entry) => {
  const part = offscreen[entry.target.id];
  part.seen = entry.isIntersecting;
  if (part.seen && part.stale) redrawIfSeen(part);
}));

function redrawIfSeen(part) {
  if (part.seen) part.draw();
  markStale(part, !part.seen);
  if (!part.seen) drawWhenIdle();
}

// Parts out of sight are drawn too, one at a time when the browser has time to spare, so that a
// page printed, saved or captured whole shows every panel; and all at once before printing.
let idleScheduled = false;
function drawWhenIdle() {
  if (idleScheduled || !window.requestIdleCallback) return;
  idleScheduled = true;
  requestIdleCallback(function drawOne(deadline) {
    const stale = Object.values(offscreen).find((part) => part.stale);
    if (stale && deadline.timeRemaining() > 15) { stale.draw(); markStale(stale, false); }
    idleScheduled = Object.values(offscreen).some((part) => part.stale);
    if (idleScheduled) requestIdleCallback(drawOne, { timeout: 2000 });
  });
}
window.addEventListener("beforeprint", () => Object.values(offscreen).forEach((part) => { if (part.stale) { part.draw(); markStale(part, false); } }));

// The head the page opens on: the one that teaches best, the costliest to switch off (on the names
// the page was written with) among those with a named pattern ("previous character", "leans to
// itself", ...: not "spread out" or "mixed"); else the costliest; else layer 0, head 0.
function firstHead() {
  if (!DATA.ablation || !DATA.roles.labels) return { layer: 0, head: 0 };
  const costs = DATA.ablation.zero.costs, heads = DATA.ablation.parts.map((p, n) => ({ ...p, cost: costs[n] }))
    .filter((p) => p.kind === "head").sort((a, b) => b.cost - a.cost);
  const named = heads.find((p) => !/^(spread out|mixed)/.test(DATA.roles.labels[p.layer][p.head]));
  const best = named || heads[0];
  return { layer: best.layer, head: best.head };
}

// after the text changes: the model runs again and everything that shows it redraws
function render() {
  const view = (state.view = analyse($("name-input").value, switchedOff(), true));
  markSwitches();
  drawInput(view);
  drawGrid();
  drawSelection();
  drawLoss();
  redrawPanels("text");
  drawLesson();
  writeAddress();
}

// after the head, row or cell changes: the parts that show the selection
function drawSelection() {
  drawMatrix();
  drawMath();
  redrawPanels("selection");
  if (state.view) writeAddress();
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
  redrawPanels("row");
}

// a new name: the chosen row follows its last character again (a row picked in the old name
// need not mean anything in this one)
function nameChanged() {
  Object.assign(state, { row: null, col: null, details: false });
  render();
}

function setText(text) {
  $("name-input").value = text;
  nameChanged();
}

$("name-input").addEventListener("input", nameChanged);
for (const radio of document.querySelectorAll("input[name=show]")) {
  radio.addEventListener("change", () => { state.show = radio.value; drawMatrix(); writeAddress(); });
}
for (const id of ["temperature", "top-k", "top-p"]) {
  $(id).addEventListener("input", () => { showFilters(); redrawPanels("filters"); });
}
for (const radio of document.querySelectorAll("input[name=off-mode]")) {
  radio.addEventListener("change", () => { state.off.mode = radio.value; buildCosts(); render(); });
}
$("all-on").addEventListener("click", () => { Object.assign(state.off, { heads: [], attention: [], mlp: [], unmasked: false }); render(); });
$("mask-off").addEventListener("change", () => { state.off.unmasked = $("mask-off").checked; write($("mask-note"), ""); render(); });
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
buildWalk();
buildReadout();
buildPredictions();
buildWhy();
buildUnits();
buildPatch();
buildHeads();
buildCosts();
buildLens();
drawCard();
buildSteps();
buildLessons();
buildCache();
$("name-input").value = DATA.start_text;
$("patch-input").value = secondName(DATA.start_text);
Object.assign(state, firstHead());
readAddress(location.hash || (DATA.start_view ? `#${DATA.start_view}` : "")); // a linked view, or the one it was written to open at
render();
if (course.lesson !== null) $(LESSONS[course.lesson].section).scrollIntoView(); // a lesson's link opens at its text
// back and forward: the view the address names then (an address typed or edited by hand too)
const goTo = () => { if (readAddress(location.hash)) { markSelectedHead(); if (DATA.roles.chars) drawCharMatrix(); render(); } };
window.addEventListener("popstate", goTo);
window.addEventListener("hashchange", goTo);
$("copy-link").addEventListener("click", copyLink);
for (const id of Object.keys(offscreen)) watcher.observe($(id));
fitFrame();

// In a notebook the page is the document of an <iframe srcdoc> (views/notebook.py): it makes its frame
// as tall as itself, so the notebook scrolls, not the frame. A frame of another origin cannot be reached,
// and a page opened on its own has none: both are left as they are.
function fitFrame() {
  let frame = null;
  try { frame = window.frameElement; } catch (error) { return; }
  if (!frame) return;
  const fit = () => { frame.style.height = `${Math.ceil(document.documentElement.scrollHeight) + 2}px`; };
  new ResizeObserver(fit).observe(document.documentElement);
  fit();
}
markSelectedHead();
if (DATA.roles.chars) drawCharMatrix();

// For tests and the curious, from the browser console: minigpt.forward("emma")
// (`off` there: {heads: [[l, h]], attention: [l], mlp: [l], mode: "zero" or "mean"}, or null for every part on)
const analyseWith = (text, off) => analyse(text, off ? switchedOff({ heads: [], attention: [], mlp: [], mode: "zero", ...off }) : null);
window.minigpt = {
  vocab,
  config: DATA.config,
  // {tokens, logits [T][vocab_size], attention [n_layer][n_head][T][T]} for the boundary token and then `text`;
  // `off` ({heads: [[l, h]], attention: [l], mlp: [l], mode: "zero" or "mean"}) switches parts off
  forward(text, off = null) {
    const view = analyseWith(text, off);
    return { tokens: view.tokens, logits: view.steps.map((s) => Array.from(s.logits)), attention: attentionOf(view) };
  },
  // `text` read a position at a time over the key/value cache, as generation reads it: the cached keys and values
  // [layer][position][n_embd] (every head's slice side by side) and the logits of each position
  cache(text) {
    const { tokens } = readText(text), { cache, steps } = readByCache(tokens);
    return { tokens, keys: cache.keys.map((l) => l.map((k) => Array.from(k))), values: cache.values.map((l) => l.map((v) => Array.from(v))),
             logits: steps.map((s) => Array.from(s.logits)) };
  },
  // what the page shows now: its tokens and logits (computed for the text box, reusing what it shares with the last),
  // and the large matrix's numbers [row][column] (the selected head's weights, or its scores with −∞ where masked)
  shown: () => ({ tokens: state.view.tokens, logits: state.view.steps.map((s) => Array.from(s.logits)), matrix: matrix.shown }),
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
  // every operation's vector at position `i` (the last when null) of `text`, by key, as the walk draws them;
  // `off` as for forward
  walk(text, i = null, off = null) {
    const view = analyseWith(text, off);
    return walkNumbers(view, i === null ? view.tokens.length - 1 : i);
  },
  // what the walk shows now: its position, each operation's vector, and the first that differs from every part on
  walkShown: () => walk.numbers && { i: walk.numbers.i, firstDiffer: walk.numbers.firstDiffer,
    numbers: Object.fromEntries(Object.entries(walk.numbers.numbers).map(([k, v]) => [k, Array.from(v)])) },
  // every part's term in every logit [position][part][token] and the parts' names, for `text` (`off` as for forward)
  attribution(text, off = null) {
    const view = analyseWith(text, off), o = off ? switchedOff({ heads: [], attention: [], mlp: [], mode: "zero", ...off }) : null;
    const found = view.steps.map((s) => MiniGPTModel.attribution(model, s, o));
    return { parts: found[0].parts.map((p) => p.name), scales: found.map((f) => f.scale),
             terms: found.map((f) => f.parts.map((p) => Array.from(p.terms))) };
  },
  // A's logits at every position with B's part at one position copied in ({kind: "residual", "head" or "mlp",
  // layer, head, position}; a residual layer of n_layer is the stream after the last layer); `off` as for forward
  patched(textA, textB, part, off = null) {
    const o = off ? switchedOff({ heads: [], attention: [], mlp: [], mode: "zero", ...off }) : null;
    return patchedRun(analyse(textA, o), analyse(textB, o), part, o).map((s) => Array.from(s.logits));
  },
  // the patching grid [stage][position] for two names, as the page draws it, and how long it took (ms)
  patchGrid(textA, textB) {
    const started = performance.now(), grid = patchGrid(analyse(textA, null), analyse(textB, null), null);
    return { grid, ms: performance.now() - started };
  },
  // what the why panel shows now: the position, the two characters, and the parts' terms as drawn, in order
  whyShown: () => ({ target: Number($("why-target").value), rival: Number($("why-rival").value),
                     toward: why.rows.toward.filter((r) => !r.node.hidden).map((r) => [r.name.textContent, r.value.textContent]) }),
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
