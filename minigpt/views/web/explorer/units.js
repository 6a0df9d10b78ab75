// units.js: what an MLP unit responds to and what it writes. The units that fire most at the
// selected position; for any unit, the prefixes of the names where it fires most (measured when
// the page was written: measurements/units.py) and the characters its output makes likelier or
// less likely, read through lm_head. A part of the explorer page (state.js lists the parts).

const Units = (() => {
const { $, BOUNDARY, DATA, config, label, rowOf, state } = State;
const { el, fmt, write } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="units" aria-labelledby="units-title">
  <h2 id="units-title">What a unit of an MLP responds to, and what it writes</h2>
  <div class="controls">
    <label>unit of <select id="unit-layer"></select></label>
    <label># <input id="unit-number" type="number" min="0" step="1"></label>
  </div>
  <p id="units-here" class="note"></p>
  <p id="unit-firing-note" class="muted"></p>
  <ol id="unit-firing" class="firing"></ol>
  <p id="unit-writes" class="note"></p>
</section>`;

const UNITS = 4 * config.n_embd;
const units = { layer: null, unit: null }; // the unit read out; null: the one that fires most here

function buildUnits() {
  const layer = $("unit-layer"), unit = $("unit-number");
  for (let l = 0; l < config.n_layer; l++) layer.append(el("option", { value: String(l) }, `layer ${l}`));
  unit.max = String(UNITS - 1);
  layer.addEventListener("change", () => { units.layer = Number(layer.value); units.unit = null; drawUnits(); });
  unit.addEventListener("change", () => {
    const n = Math.round(Number(unit.value));
    if (Number.isFinite(n) && n >= 0 && n < UNITS) { units.unit = n; units.layer = Number(layer.value); drawUnits(); }
  });
}

function drawUnits() {
  const view = state.view, i = rowOf(view), l = units.layer ?? state.layer, s = view.steps[i];
  const hidden = s.layers[l].hidden, read = `“${BOUNDARY}${view.kept.slice(0, i).join("")}”`;
  const firing = Array.from(hidden, (x, n) => [x, n]).sort((a, b) => b[0] - a[0]).slice(0, 5);
  const unit = units.unit ?? firing[0][1];
  $("unit-layer").value = String(l);
  $("unit-number").value = String(unit);
  const here = $("units-here");
  here.replaceChildren(`After ${read} (position ${i}), the units of layer ${l}'s MLP that fire most (after the ` +
    `${config.activation}, what mlp_fc2 reads): `, ...firing.flatMap(([x, n], k) => [k ? ", " : "",
    el("button", { type: "button", class: `unit${n === unit ? " chosen" : ""}`, "aria-pressed": String(n === unit),
                   onclick: () => { units.layer = l; units.unit = n; drawUnits(); } }, `#${n} ${fmt(x, 2)}`)]), ".");
  drawFiring(l, unit, hidden[unit]);
  const terms = MiniGPTModel.readThrough(state.model, MiniGPTModel.unitColumn(state.model, l, unit));
  const order = Array.from(terms, (v, t) => [v, t]).sort((a, b) => b[0] - a[0]);
  const list = (pairs) => pairs.map(([v, t]) => `‘${label(t)}’ ${v > 0 ? "+" : ""}${fmt(v, 3)}`).join(", ");
  const norm = config.final_norm ? `lm_head${config.norm_scale ? " and the final norm's gains" : ""}, before the ` +
    `final norm's scale at a position` : "lm_head (this recipe has no final norm)";
  write($("unit-writes"), `What unit #${unit} writes: column ${unit} of layer ${l}'s mlp_fc2, times its activation ` +
    `(here ${fmt(hidden[unit], 3)}). Read through ${norm}, each unit of activation raises ${list(order.slice(0, 5))} ` +
    `and lowers ${list(order.slice(-5).reverse())}.`);
}

// the prefixes where a unit fires most, each with its last character marked (the position it fires at)
function drawFiring(l, unit, value) {
  const carried = DATA.units, list = $("unit-firing");
  if (!carried || !carried.layers.length) {
    write($("unit-firing-note"), "This page carries no names to say where the units fire.");
    list.replaceChildren();
    return;
  }
  const shown = state.snapshot === null ? "" : " (with the checkpoint's weights, not the snapshot's)";
  write($("unit-firing-note"), `Where unit #${unit} of layer ${l} fires most among the prefixes of ${carried.names}${shown}, ` +
    `at the marked character; here it is ${fmt(value, 3)}:`);
  list.replaceChildren(...carried.layers[l][unit].map((p, k) => {
    const text = carried.prefixes[p], last = [...text].pop();
    return el("li", {}, el("span", { class: "strip-text" }, text.slice(0, text.length - last.length), el("mark", {}, last)),
              ` ${fmt(carried.values[l][unit][k], 3)}`);
  }));
}

return { buildUnits, drawUnits, section };
})();
