// wiring.js: the registry of panels, what redraws on each change, the events, the start, and the
// console API. The last part of the explorer page (state.js lists the parts).

(() => {
const { $, DATA, V, analyse, changed, disagreement, setPart, setText, state, switchedOff, vocab } = State;
const { buildReadout, write } = Drawing;

// A page whose model.js disagrees with torch (state.js) draws nothing: one plain paragraph says why.
if (disagreement) {
  const said = document.createElement("p");
  said.id = "torch-check";
  said.setAttribute("role", "alert");
  said.textContent = `This page does not agree with torch, so it shows none of its numbers: for ` +
    `“${disagreement.text}” the logits its JavaScript (model.js) computes differ from those torch computed ` +
    `by up to ${Number.isFinite(disagreement.worst) ? disagreement.worst.toPrecision(3) : "a number that is not finite"} ` +
    `(they agree to 0.001 when both compute one model). The code that trained this model computes something ` +
    `model.js does not (a changed core?): teach model.js the change, beside model.py, and write the page again.`;
  $("lesson").append(said);
  document.body.classList.add("disagrees");
  return;
}

// Every panel of the page, top to bottom: its section (`section`) goes into explorer.html's `main`
// (`into: "lesson"`, the first screen) or below it, in this list's order; `build` makes what never
// changes (once, in this order), `draw` writes the numbers of the state now, and `on` lists the
// changes that redraw it, in the words the controls announce (State.changed): "text" (the model ran
// again: on the text, a new name, other parts off or the step shown), SELECTION (that, or another
// head or cell), and the rest. A panel with an `id` sits below the first screen: it is drawn when it
// is in sight, or when the browser has time to spare, and is aria-busy until then. A new panel is its
// part file and one line here, in its place, with its section's HTML and, where it has them, its
// address key (`address`: {key, write, read}) and its lesson (`lesson`).
const SELECTION = ["text", "head", "cell"];
const PANELS = [
  { section: Heads.section, into: "lesson", build: Heads.buildInput, draw: () => Heads.drawInput(state.view), on: ["text"] },
  { build: Heads.buildGrid, draw: () => { Heads.markSwitches(); Heads.drawGrid(); }, on: ["text"] },
  { draw: Heads.markSelectedHead, on: ["head", "snapshot"] },
  { section: Matrix.section, into: "lesson", build: Matrix.buildMatrix, draw: Matrix.drawMatrix, on: [...SELECTION, "show"] },
  { draw: Matrix.drawMaskEffect, on: ["text"] },
  { section: WorkedRow.section, into: "lesson", build: WorkedRow.buildMath, draw: WorkedRow.drawMath, on: SELECTION },
  { draw: () => { Matrix.drawHover(); WorkedRow.drawHover(); }, on: [...SELECTION, "show", "hover"] },
  { section: WorkedRow.flowSection, id: "flow", build: WorkedRow.buildFlow, draw: WorkedRow.drawFlow, on: SELECTION },
  { section: Walk.section, id: "walk", build: Walk.buildWalk, draw: Walk.drawWalk, on: [...SELECTION, "filters"] },
  { build: buildReadout },
  { section: Predictions.section, build: Predictions.buildPredictions, draw: Predictions.drawLoss, on: ["text"] },
  { id: "predict", draw: Predictions.drawPredictions, on: ["text", "cell", "filters"] },
  { section: Cache.section, id: "cache", build: Cache.buildCache, draw: Cache.drawCache, on: SELECTION },
  { section: Why.section, id: "why", build: Why.buildWhy, draw: Why.drawWhy, on: ["text", "cell", "why"] },
  { section: Units.section, id: "units", build: Units.buildUnits, draw: Units.drawUnits, on: ["text", "cell"] },
  { section: Patch.section, id: "patch", build: Patch.buildPatch, draw: Patch.drawPatch, on: ["text", "second"] },
  { section: Lens.section, id: "lens", build: Lens.buildLens, draw: Lens.drawLens, on: ["text"] },
  { section: Ablation.section, build: Ablation.buildCosts, draw: Ablation.drawCosts, on: ["snapshot", "text"] },
  { id: "ablation", draw: Ablation.drawLiveCosts, on: ["text"] },
  { section: Generate.section, build: Generate.showFilters, draw: Generate.showFilters, on: ["filters"] },
  { section: HeadRoles.section, build: HeadRoles.buildHeads, draw: HeadRoles.markSelectedCard, on: ["head", "snapshot"] },
  { draw: () => DATA.roles.chars && HeadRoles.drawCharMatrix(), on: ["head", "snapshot"] },
  { draw: HeadRoles.drawHeads, on: ["snapshot"] },
  { section: Card.section, build: Card.drawCard, draw: () => DATA.snapshots && Card.moveStepMarker(stepShown()),
    on: ["snapshot", "text"] },
  { build: Snapshots.buildSteps, draw: Snapshots.drawStep, on: ["snapshot"] },
  { build: Lessons.buildLessons, draw: Lessons.drawLesson, on: [...SELECTION, "second"] },
];

// the training step whose weights the page runs
const stepShown = () => (state.snapshot === null ? DATA.snapshots.checkpoint_step : DATA.snapshots.steps[state.snapshot]);

// The sections in the registry's order: the first screen's into `main`, the rest after it, each below
// the one before; then each panel's address key and lesson join the page's.
let below = $("lesson");
for (const panel of PANELS.filter((p) => p.section)) {
  if (panel.into) {
    $(panel.into).insertAdjacentHTML("beforeend", panel.section);
  } else {
    below.insertAdjacentHTML("afterend", panel.section);
    below = below.nextElementSibling;
  }
}
for (const panel of PANELS) {
  if (panel.address) Address.addKey(panel.address);
  if (panel.lesson) Lessons.addLesson(panel.lesson);
}

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
// page printed, saved or captured whole shows every panel; and all at once before printing. A
// browser that never has time to spare (a busy machine, a tab behind others) calls back only at the
// timeout, with none left: one part is drawn then all the same, or none would be until seen.
const IDLE_WAIT = { timeout: 2000 }; // ms at most between one part drawn out of sight and the next
let idleScheduled = false;
function drawWhenIdle() {
  if (idleScheduled || !window.requestIdleCallback) return;
  idleScheduled = true;
  requestIdleCallback(function drawOne(deadline) {
    const stale = Object.values(offscreen).find((part) => part.stale);
    if (stale && (deadline.didTimeout || deadline.timeRemaining() > 15)) { stale.draw(); markStale(stale, false); }
    idleScheduled = Object.values(offscreen).some((part) => part.stale);
    if (idleScheduled) requestIdleCallback(drawOne, IDLE_WAIT);
  }, IDLE_WAIT);
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

// The changes a control announces (State.changed), each redrawing what it concerns, and what else a
// change means: a new name is new text, and so are other weights. On new text the model runs again
// (reusing what the last run shares with this one) before anything is drawn; a new name also sets the
// chosen row back to its last character (a row picked in the old name need not mean anything in this one).
const ALSO = { name: ["text"], snapshot: ["text"] };
const rerun = () => { state.view = analyse(state.name, switchedOff(), true); };
function onChange(what, detail) {
  if (what === "resized") return redrawIfSeen(offscreen[detail]);
  if (what === "lesson" && offscreen[detail]) { // the section a lesson scrolls to: drawn now, measured as it will look
    offscreen[detail].seen = true; // the watcher says otherwise once it has looked, if the reader scrolls away
    redrawIfSeen(offscreen[detail]);
  }
  if (what === "name") Object.assign(state, { row: null, col: null, details: false });
  const follows = what === "name" && state.secondFollows; // the second name goes with the first until typed
  if (follows) state.second = $("patch-input").value = Patch.secondName(state.name);
  const changes = [what, ...(ALSO[what] || []), ...(follows ? ["second"] : [])];
  if (changes.includes("text")) rerun();
  redraw(...changes);
}
State.onChange(onChange);

// the controls that belong to no one part: each writes the state and says what changed
$("name-input").addEventListener("input", () => { state.name = $("name-input").value; changed("name"); });
for (const radio of document.querySelectorAll("input[name=show]")) {
  radio.addEventListener("change", () => { state.show = radio.value; changed("show"); });
}
const filtersFromSliders = () => {
  state.filters = { temperature: parseFloat($("temperature").value), topK: parseFloat($("top-k").value),
                    topP: parseFloat($("top-p").value) };
};
for (const id of ["temperature", "top-k", "top-p"]) $(id).addEventListener("input", () => { filtersFromSliders(); changed("filters"); });
for (const radio of document.querySelectorAll("input[name=off-mode]")) {
  radio.addEventListener("change", () => { state.off.mode = radio.value; Ablation.buildCosts(); changed("text"); });
}
$("all-on").addEventListener("click", () => { Object.assign(state.off, { heads: [], attention: [], mlp: [], unmasked: false }); changed("text"); });
$("mask-off").addEventListener("change", () => { state.off.unmasked = $("mask-off").checked; write($("mask-note"), ""); changed("text"); });
$("next-char").addEventListener("click", () => Generate.nextCharacter());
$("cache-next").addEventListener("click", () => Generate.nextCharacter("cache-next-note")); // lesson 4's: said beside it
$("whole-name").addEventListener("click", Generate.wholeName);
$("ten-names").addEventListener("click", Generate.tenNames);
$("top-k").max = V;
$("temperature").value = DATA.config.sample.temperature;
$("top-k").value = DATA.config.sample.top_k;
$("top-p").value = DATA.config.sample.top_p;
filtersFromSliders();
$("membership-note").textContent = DATA.membership.note;
// the view an address names, set into the state, and its lesson opened; false when it names none
function openAddress(hash) {
  const named = Address.readAddress(hash);
  state.secondFollows = state.second === Patch.secondName(state.name); // a second name of one's own stays
  if (named) Lessons.openLesson(state.lesson, false, named.lessonSetsView);
  return Boolean(named);
}

PANELS.forEach((panel) => panel.build && panel.build());
state.name = $("name-input").value = DATA.start_text;
state.second = $("patch-input").value = Patch.secondName(DATA.start_text);
Object.assign(state, firstHead());
// a linked view, or the one the page was written to open at
openAddress(location.hash || (DATA.start_view ? `#${DATA.start_view}` : ""));
rerun();
redraw(...SELECTION, "snapshot");
// a lesson's link opens at it, the focus at its title: the first Tab goes on from the lesson, not the page's top
const openAtLesson = () => {
  Lessons.bringIntoView(Lessons.LESSONS[state.lesson]);
  $("lesson-title").focus({ preventScroll: true });
};
if (state.lesson !== null) openAtLesson();
// back and forward: the view the address names then; an address typed or edited by hand (hashchange) opens
// at its lesson, as a link does, and back or forward at a lesson other than the one open
const goTo = (event) => {
  const before = state.lesson;
  if (!openAddress(location.hash)) return;
  rerun();
  redraw(...SELECTION, "snapshot");
  if (state.lesson !== null && (event.type === "hashchange" || state.lesson !== before)) openAtLesson();
};
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

// A head named from the console, where a learner types its numbers: one the model does not have is said so in
// one line, rather than failing later inside a drawing.
function checkHead(layer, head) {
  const { n_layer, n_head } = State.config;
  const within = (n, count) => Number.isInteger(n) && n >= 0 && n < count;
  const refuse = (has) => { throw new RangeError(`minigpt.select(${layer}, ${head}): this model has ${has}`); };
  if (!within(layer, n_layer)) refuse(`${n_layer} layer${n_layer > 1 ? "s" : ""}, 0 to ${n_layer - 1}`);
  if (!within(head, n_head)) refuse(`${n_head} head${n_head > 1 ? "s" : ""} a layer, 0 to ${n_head - 1}`);
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
  showSnapshot: State.showSnapshot,
  setText,
  setPart,
  select(layer, head) { checkHead(layer, head); State.selectHead(layer, head); },
  selectCell: State.selectCell,
};
})();
