// wiring.js: the registry of panels, what redraws on each change, the events, the start, and the
// console API. The last part of the explorer page (state.js lists the parts).

(() => {
const { $, DATA, V, analyse, setPart, setText, state, switchedOff, vocab } = State;
const { buildReadout, write } = Drawing;

// Every panel of the page, in the order they are built: `build` makes what never changes (once),
// `draw` writes the numbers of the state now, and `on` says which changes redraw it: "text" (the
// model ran again: the name, the parts switched off, the mask), "second" (the second name),
// "selection" (the head, the row or the cell), "head" (the head alone), "row" (the row or the cell
// alone), "show" (weights or scores), "filters" (the sampling sliders), "snapshot" (the step shown).
// A panel with an `id` sits below the first screen: it is drawn when it is in sight, or when the
// browser has time to spare, and is aria-busy until then. A new panel is its part file and one line
// here, with its section's HTML (`section`, put after the section `after` names); the page's own
// panels have theirs in explorer.html.
const PANELS = [
  { build: Generate.showFilters, draw: Generate.showFilters, on: ["filters"] },
  { build: Heads.buildInput, draw: () => Heads.drawInput(state.view), on: ["text"] },
  { build: Heads.buildGrid, draw: () => { Heads.markSwitches(); Heads.drawGrid(); }, on: ["text"] },
  { draw: Heads.markSelectedHead, on: ["head"] },
  { build: Matrix.buildMatrix, draw: Matrix.drawMatrix, on: ["selection", "show"] },
  { build: WorkedRow.buildMath, draw: WorkedRow.drawMath, on: ["selection"] },
  { id: "flow", build: WorkedRow.buildFlow, draw: WorkedRow.drawFlow, on: ["selection"] },
  { id: "walk", build: Walk.buildWalk, draw: Walk.drawWalk, on: ["selection", "filters"] },
  { build: buildReadout },
  { build: Predictions.buildPredictions, draw: Predictions.drawLoss, on: ["text"] },
  { id: "predict", draw: Predictions.drawPredictions, on: ["text", "row", "filters"] },
  { id: "why", build: Why.buildWhy, draw: Why.drawWhy, on: ["text", "row"] },
  { id: "units", build: Units.buildUnits, draw: Units.drawUnits, on: ["text", "row"] },
  { id: "patch", build: Patch.buildPatch, draw: Patch.drawPatch, on: ["text", "second"] },
  { build: HeadRoles.buildHeads, draw: HeadRoles.markSelectedCard, on: ["head"] },
  { draw: () => DATA.roles.chars && HeadRoles.drawCharMatrix(), on: ["head", "snapshot"] },
  { draw: HeadRoles.drawHeads, on: ["snapshot"] },
  { build: Ablation.buildCosts, draw: Ablation.drawCosts, on: ["snapshot"] },
  { id: "ablation", draw: Ablation.drawLiveCosts, on: ["text"] },
  { id: "lens", build: Lens.buildLens, draw: Lens.drawLens, on: ["text"] },
  { build: Card.drawCard, draw: () => Card.moveStepMarker(stepShown()), on: ["snapshot"] },
  { build: Snapshots.buildSteps },
  { build: Lessons.buildLessons, draw: Lessons.drawLesson, on: ["text", "second"] },
  { id: "cache", build: Cache.buildCache, draw: Cache.drawCache, on: ["selection"] },
];

// the training step whose weights the page runs
const stepShown = () => (state.snapshot === null ? DATA.snapshots.checkpoint_step : DATA.snapshots.steps[state.snapshot]);

for (const panel of PANELS) if (panel.section) $(panel.after).insertAdjacentHTML("afterend", panel.section);

// Redraw every panel that one of `changes` concerns, in the registry's order; then the address follows.
function redraw(...changes) {
  for (const panel of PANELS) {
    if (!panel.draw || !panel.on.some((change) => changes.includes(change))) continue;
    if (panel.id) redrawIfSeen(offscreen[panel.id]);
    else panel.draw();
  }
  if (state.view) Address.writeAddress();
}

// The panels below the first screen, drawn when seen: a keystroke that redraws only what can be seen
// leaves the browser less to lay out, and a panel that changed while out of sight is drawn as it
// comes into view. A panel not yet redrawn says so as a screen reader hears it: it is aria-busy.
const offscreen = Object.fromEntries(PANELS.filter((panel) => panel.id).map(({ id, draw }) => [id, { draw, seen: false, stale: true, section: $(id) }]));
function markStale(part, stale) {
  part.stale = stale;
  part.section.setAttribute("aria-busy", String(stale));
}
Object.values(offscreen).forEach((part) => markStale(part, true));

// A panel whose top edge alone peeks in at the foot of the screen (its heading, at most) is not yet seen:
// the first screen at 1280 x 900 ends just inside the next panel, which a keystroke would redraw unseen.
const watcher = new IntersectionObserver((entries) => entries.forEach((entry) => {
  const part = offscreen[entry.target.id];
  part.seen = entry.isIntersecting;
  if (part.seen && part.stale) redrawIfSeen(part);
}), { rootMargin: "0px 0px -48px 0px" });

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

// The changes a control announces (State.changed), each redrawing what it concerns. The model runs
// again on "text" (reusing what the last run shares with this one) before anything is drawn.
const rerun = () => { state.view = analyse(state.name, switchedOff(), true); };
const onChange = {
  text: () => { rerun(); redraw("text", "selection"); },
  // a new name: the chosen row follows its last character again (a row picked in the old name need
  // not mean anything in this one)
  name: () => { Object.assign(state, { row: null, col: null, details: false }); onChange.text(); },
  second: () => redraw("second"),
  head: () => redraw("head", "selection"),
  cell: () => redraw("selection", "row"),
  snapshot: () => { rerun(); redraw("snapshot", "head", "text", "selection"); },
  resized: (id) => redrawIfSeen(offscreen[id]),
};
State.onChange((what, detail) => onChange[what](detail));

$("name-input").addEventListener("input", () => { state.name = $("name-input").value; onChange.name(); });
for (const radio of document.querySelectorAll("input[name=show]")) {
  radio.addEventListener("change", () => { state.show = radio.value; redraw("show"); });
}
for (const id of ["temperature", "top-k", "top-p"]) $(id).addEventListener("input", () => redraw("filters"));
for (const radio of document.querySelectorAll("input[name=off-mode]")) {
  radio.addEventListener("change", () => { state.off.mode = radio.value; Ablation.buildCosts(); onChange.text(); });
}
$("all-on").addEventListener("click", () => { Object.assign(state.off, { heads: [], attention: [], mlp: [], unmasked: false }); onChange.text(); });
$("mask-off").addEventListener("change", () => { state.off.unmasked = $("mask-off").checked; write($("mask-note"), ""); onChange.text(); });
$("next-char").addEventListener("click", Generate.nextCharacter);
$("whole-name").addEventListener("click", Generate.wholeName);
$("ten-names").addEventListener("click", Generate.tenNames);
$("top-k").max = V;
$("temperature").value = DATA.config.sample.temperature;
$("top-k").value = DATA.config.sample.top_k;
$("top-p").value = DATA.config.sample.top_p;
$("membership-note").textContent = DATA.membership.note;
PANELS.forEach((panel) => panel.build && panel.build());
state.name = $("name-input").value = DATA.start_text;
state.second = $("patch-input").value = Patch.secondName(DATA.start_text);
Object.assign(state, firstHead());
Address.readAddress(location.hash || (DATA.start_view ? `#${DATA.start_view}` : "")); // a linked view, or the one it was written to open at
rerun();
redraw("text", "selection", "head");
if (state.lesson !== null) $(Lessons.LESSONS[state.lesson].section).scrollIntoView(); // a lesson's link opens at its text
// back and forward: the view the address names then (an address typed or edited by hand too)
const goTo = () => { if (Address.readAddress(location.hash)) { rerun(); redraw("text", "selection", "head"); } };
window.addEventListener("popstate", goTo);
window.addEventListener("hashchange", goTo);
$("copy-link").addEventListener("click", Address.copyLink);
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

// For the curious, from the browser console: minigpt.forward("emma"), minigpt.sampleNames(10). (The tests
// read more of the page through tests/page_readers.js, which they add to it.)
window.minigpt = {
  vocab,
  config: DATA.config,
  // {tokens, logits [T][vocab_size], attention [n_layer][n_head][T][T]} for the boundary token and then `text`;
  // `off` ({heads: [[l, h]], attention: [l], mlp: [l], mode: "zero" or "mean"}) switches parts off
  forward(text, off = null) {
    const view = analyse(text, State.partsOff(off));
    return { tokens: view.tokens, logits: view.steps.map((s) => Array.from(s.logits)), attention: State.attentionOf(view) };
  },
  sample: Generate.sample,
  sampleNames: (n, opts = {}) => Array.from({ length: n }, (_, k) => Generate.sample({ ...opts, seed: (opts.seed || 1) + k })),
  inTrainingData: Generate.inTrainingData,
  // show training snapshot `index` (DATA.snapshots.steps[index]); the page then runs its weights
  showSnapshot: Snapshots.showSnapshot,
  setText,
  setPart,
  select: State.selectHead,
  selectCell: State.selectCell,
};
})();
