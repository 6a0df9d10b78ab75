// ablation.js: switching parts off, and what each costs. A part of the explorer page (state.js
// lists the parts).

const Ablation = (() => {
const { $, DATA, ablationNow, headLabel, isOn, state } = State;
const { el, forgetSwitchesIn, markPartSwitches, partSwitch, restyle, write } = Drawing;
const { nameLoss } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="ablation" aria-labelledby="ablation-title">
  <h2 id="ablation-title">Switch parts off</h2>
  <p class="muted">Where a head looks is not whether the model needs it. Switch a head, a layer's attention or its MLP off
  (here, or with the switches beside every head above) and the whole page follows: the attention of every later layer,
  the predictions, the name's loss. The table says what each part costs when it alone is switched off, on the names
  the page was written with (<code>minigpt ablate</code> prints the same) and on the name in the box.</p>
  <div class="controls">
    <span role="radiogroup" aria-label="what switching a part off does">
      <label><input type="radio" name="off-mode" value="zero" checked> zero: the part adds nothing</label>
      <label><input type="radio" name="off-mode" value="mean"> mean: it adds its average, whatever the input</label>
    </span>
    <button id="all-on" hidden>switch every part on</button>
  </div>
  <p id="parts-off" class="note" role="status"></p>
  <p id="ablation-note" class="muted"></p>
  <p id="costs-caption" class="muted"></p>
  <div class="scroll" tabindex="0" role="region" aria-label="what each part costs, scrolls sideways"><table id="ablation-table" class="costs" aria-describedby="costs-caption"></table></div>
</section>`;

const costRows = [];
// the table's rows, in the order of the chosen mode's costs at the checkpoint (kept as the step
// moves, so a part stays on its row)
function buildCosts() {
  const table = $("ablation-table"), found = DATA.ablation;
  costRows.length = 0;
  forgetSwitchesIn(table); // the old table's
  if (!found) return write($("costs-caption"), "No names to measure the parts on were at hand when this page was written.");
  const costs = found[state.off.mode].costs, largestFirst = found.parts.map((p, n) => ({ ...p, n }))
    .sort((a, b) => costs[b.n] - costs[a.n]); // as minigpt ablate lists them
  const rows = largestFirst.map((p) => {
    const live = el("td", { class: "live" }), bar = el("span", { class: "bar" }), cost = el("span"), label = el("td", { class: "label" });
    const row = el("tr");
    costRows.push({ part: p, live, bar, cost, label, row, liveCost: null });
    row.append(el("th", { scope: "row" }, p.part),
      el("td", {}, partSwitch(p.kind === "head" ? "head" : p.kind, p.layer, p.head, "on")),
      el("td", { class: "num" }, bar, cost), live, label); // the costs before the description: in view on a phone
    return row;
  });
  // the table's caption is short: the loss it is measured against is said above its scrolling box, which
  // on a phone would cut a caption as wide as the table
  table.replaceChildren(el("caption", {}, "What each part costs"),
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, sortButton("part", "part")), el("th", { scope: "col" }, "on"),
      el("th", { scope: "col" }, sortButton("names", `cost on ${found.names}`)),
      el("th", { scope: "col" }, sortButton("name", "cost on the name in the box, from the parts on now")),
      el("th", { scope: "col" }, "what it tends to do"))),
    el("tbody", {}, ...rows));
  markPartSwitches();
  drawCosts();
  sortCosts();
}

// The table sorts by a column's heading, a button: the parts in the model's order, or the costliest first,
// on the names or on the name in the box. aria-sort tells a screen reader which.
let costOrder = "names";
function sortButton(order, text) {
  const button = el("button", { type: "button", class: "sort" }, text);
  button.addEventListener("click", () => { costOrder = order; sortCosts(); });
  return button;
}

function sortCosts() {
  const now = ablationNow();
  if (!now || !costRows.length) return;
  const costs = now[state.off.mode].costs;
  const key = { part: (r) => r.part.n, names: (r) => -costs[r.part.n], name: (r) => -(r.liveCost ?? -Infinity) }[costOrder];
  const sorted = [...costRows].sort((a, b) => key(a) - key(b) || a.part.n - b.part.n);
  $("ablation-table").tBodies[0].append(...sorted.map((r) => r.row));
  [...$("ablation-table").tHead.rows[0].cells].forEach((cell, c) =>
    cell.setAttribute("aria-sort", ["part", null, "names", "name"][c] === costOrder ? (costOrder === "part" ? "ascending" : "descending") : "none"));
}

// a cost with its sign; one that rounds to 0 has none (never "−0.0000")
function signed(x) {
  const size = Math.abs(x).toFixed(4);
  return Number(size) === 0 ? size : `${x > 0 ? "+" : "−"}${size}`;
}

// the costs on the names, at the step shown
function drawCosts() {
  const found = ablationNow();
  if (!found) return;
  const report = found[state.off.mode], most = Math.max(1e-9, ...report.costs.map(Math.abs));
  const step = state.snapshot === null ? "" : ` at step ${DATA.snapshots.steps[state.snapshot].toLocaleString("en")} ` +
    "(measured on that snapshot's weights, 6 bits a number, so not the run's own evaluation)";
  write($("costs-caption"), `Loss with every part on${step}: ${report.loss.toFixed(4)} nats per token over ${DATA.ablation.names}. ` +
    "A cost is the loss with that part off minus this: a negative cost means the names got likelier with the part off." +
    (state.off.unmasked ? " Both with the mask, as the run trained: the mask switch changes the name's view, not these." : ""));
  for (const row of costRows) {
    const c = report.costs[row.part.n];
    write(row.cost, signed(c));
    if (row.part.kind === "head") write(row.label, headLabel(row.part.layer, row.part.head));
    restyle(row.bar, "width", `${Math.round((60 * Math.max(0, c)) / most)}px`);
  }
}


// each part's cost on the name in the box: its loss with that part off too, minus its loss now
function drawLiveCosts() {
  const started = performance.now(), now = nameLoss(state.off);
  let heads = performance.now() - started; // the time the heads' costs take, with the loss they share
  for (const row of costRows) {
    const { part, live } = row;
    row.liveCost = null;
    if (!isOn(part.kind, part.layer, part.head)) { write(live, "off"); continue; }
    if (part.kind === "head" && !isOn("attention", part.layer)) { write(live, "off (its layer's attention)"); continue; }
    const partStarted = performance.now();
    const more = { ...state.off, heads: [...state.off.heads], attention: [...state.off.attention], mlp: [...state.off.mlp] };
    if (part.kind === "head") more.heads.push([part.layer, part.head]);
    else more[part.kind].push(part.layer);
    // the layers before this part's are the same as now: start from what they made
    const from = { layer: part.layer, residual: state.view.steps.map((step) => step.layers[part.layer].residual) };
    const cost = nameLoss(more, from) - now;
    row.liveCost = cost;
    write(live, signed(cost));
    if (part.kind === "head") heads += performance.now() - partStarted;
  }
  if (costOrder === "name") sortCosts(); // the name changed, so did its order
  $("ablation-table").dataset.liveMs = String(performance.now() - started);
  $("ablation-table").dataset.headsMs = String(heads);
}

return { buildCosts, costRows, drawCosts, drawLiveCosts, section };
})();
