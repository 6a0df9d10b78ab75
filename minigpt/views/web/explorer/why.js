// why.js: why this character. The logit of a character at the selected position split into
// what each part writes toward it (model.js's attribution, measurements/attribution.py), and the
// same for one character rather than another. A part of the explorer page (state.js lists the parts).

const Why = (() => {
const { $, BOS, BOUNDARY, V, changed, config, explain, label, rowOf, state, switchedOff } = State;
const { el, fmt, frame, hide, largest, overlay, paintNamed, readable, restyle, write } = Drawing;
const { baselineOf } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="why" aria-labelledby="why-title">
  <h2 id="why-title">Why this character</h2>
  <div class="controls">
    <label>the logit of <select id="why-target"></select></label>
    <label>rather than <select id="why-rival"></select></label>
  </div>
  <p id="why-note" class="note"></p>
  <div id="why-row"></div>
  <div id="why-toward" class="why-bars" role="group" aria-label="what each part writes toward the character, largest first"></div>
  <p id="why-part" class="note" role="status"></p>
  <p id="why-against-note" class="note"></p>
  <div id="why-against" class="why-bars" role="group" aria-label="what each part writes toward the character rather than the other, largest first"></div>
</section>`;

// the characters explained (null: the likeliest, and the runner-up) and the part whose writing is read out
// (null: the one that writes most toward the character)
const why = { rows: { toward: [], against: [] } }; // what is explained: state.why
const WHY_PARTS = 1 + config.n_layer * (config.n_head + 2); // every part, and a switched-off attention's own line

function buildWhy() {
  for (const kind of ["toward", "against"]) {
    for (let n = 0; n < WHY_PARTS; n++) {
      const row = { name: el("span", { class: "part" }), left: el("span", { class: "neg" }), right: el("span", { class: "pos" }),
                    value: el("span", { class: "value" }) };
      row.node = el("button", { class: "why-bar", type: "button", "aria-label": "a part, not drawn yet" }, row.name, el("span", { class: "half left" }, row.left),
                    el("span", { class: "half" }, row.right), row.value);
      row.node.addEventListener("click", () => explain({ part: row.name.textContent }));
      why.rows[kind].push(row);
    }
    $(`why-${kind}`).append(...why.rows[kind].map((r) => r.node));
    // one Tab stop for the whole list: ↑ and ↓ move along it, Enter or a click reads a part out
    $(`why-${kind}`).addEventListener("keydown", (event) => {
      const shown = why.rows[kind].filter((r) => !r.node.hidden), at = shown.findIndex((r) => r.node === document.activeElement);
      const step = { ArrowDown: 1, ArrowUp: -1, Home: -shown.length, End: shown.length }[event.key];
      if (step === undefined || at < 0) return;
      event.preventDefault();
      const next = shown[Math.max(0, Math.min(shown.length - 1, at + step))].node;
      shown.forEach((r) => r.node.setAttribute("tabindex", r.node === next ? "0" : "-1"));
      next.focus();
    });
  }
  for (const [id, key] of [["why-target", "target"], ["why-rival", "rival"]]) {
    const select = $(id);
    for (let t = 0; t < V; t++) select.append(el("option", { value: String(t) }, t === BOS ? `${BOUNDARY} (the end)` : label(t)));
    select.addEventListener("change", () => explain({ [key]: Number(select.value) }));
  }
  buildWhyRow();
}

// The row of lm_head every part is read through, and the final norm's gains where the recipe has
// them: the weights at the end of the hand check, readable like every strip
const whyRow = { frames: {}, labels: {}, picture: null };
function buildWhyRow() {
  const E = config.n_embd, holder = $("why-row"), names = ["row", ...(config.final_norm && config.norm_scale ? ["gains"] : [])];
  for (const name of names) {
    whyRow.frames[name] = frame(E);
    whyRow.labels[name] = el("span", { class: "what" });
    holder.append(el("div", { class: "flow-step" }, whyRow.labels[name], whyRow.frames[name], el("span", { class: "shape" }, `[${E}]`)));
  }
  whyRow.picture = overlay(holder, holder, (at) => Object.fromEntries(Object.entries(whyRow.frames).map(([n, f]) => [n, at(f, 1)])),
    () => changed("resized", "why"));
}

function drawWhyRow(s, target, scale) {
  const W = state.model.weights.lm_head, E = W.cols, row = W.data.subarray(target * E, (target + 1) * E), t = label(target);
  const gains = whyRow.frames.gains ? state.model.weights.final_norm.data : null;
  const read = config.final_norm ? "final_norm" : `layer${config.n_layer - 1}.after_mlp`;
  write(whyRow.labels.row, `lm_head[“${t}”]: the row every part is read through`);
  readable(whyRow.frames.row, `lm_head[“${t}”]`, row, (j) => `${read}[${j}] × lm_head[“${t}”, ${j}] = ${fmt(s.final[j], 4)} × ` +
    `${fmt(row[j], 4)} = ${fmt(s.final[j] * row[j], 4)}; the ${E} terms add up to the logit, ${fmt(s.logits[target], 4)}`);
  const painted = [[row, largest(row), "row"]];
  if (gains) {
    const offOne = gains.map((g) => g - 1);
    write(whyRow.labels.gains, "final_norm's gains (colour: gain − 1)");
    readable(whyRow.frames.gains, "final_norm gains", gains, (j) => `${read}[${j}] = x[${j}] × 1/rms(x) × gains[${j}] = ` +
      `${fmt(s.last[j], 4)} × ${fmt(scale, 4)} × ${fmt(gains[j], 4)}`);
    painted.push([offOne, largest(offOne), "gains"]);
  }
  paintNamed(whyRow.picture, painted);
}

function drawWhy() {
  const view = state.view, i = rowOf(view), s = view.steps[i], off = switchedOff();
  const probs = MiniGPTModel.softmax(Array.from(s.logits));
  const order = probs.map((_, t) => t).sort((a, b) => probs[b] - probs[a]);
  const target = state.why.target ?? order[0], chosen = state.why.rival;
  const rival = chosen !== null && chosen !== target ? chosen : order[target === order[0] ? 1 : 0];
  $("why-target").value = String(target);
  $("why-rival").value = String(rival);
  const found = MiniGPTModel.attribution(state.model, s, off);
  const allOn = off ? new Map(MiniGPTModel.attribution(state.model, baselineOf(view)[i], null).parts.map((p) => [p.name, p.terms])) : null;
  drawPartWrites(found.parts, i);
  drawWhyRow(s, target, found.scale);
  const read = `“${BOUNDARY}${view.kept.slice(0, i).join("")}”`, t = label(target), r = label(rival);
  const end = (token) => (token === BOS ? " (the end of the name)" : "");
  drawTerms(why.rows.toward, found.parts.map((p) => [p.name, p.terms[target], allOn && allOn.get(p.name)?.[target]]));
  drawTerms(why.rows.against, found.parts.map((p) => [p.name, p.terms[target] - p.terms[rival],
    allOn && allOn.get(p.name) && allOn.get(p.name)[target] - allOn.get(p.name)[rival]]));
  const scale = config.final_norm
    ? `times the final norm's scale at this position, 1/rms(x) = ${fmt(found.scale, 3)}, the same for every part` +
      (config.norm_scale ? ", and its gains" : "")
    : "as it is: this recipe has no final norm, so the scale is 1";
  write($("why-note"), `After ${read} (position ${i}), the logit of ‘${t}’${end(target)} is ${fmt(s.logits[target], 3)} ` +
    `(p = ${fmt(probs[target], 3)}): the sum of the terms below, one for each part that writes into the residual ` +
    `stream. A part's term is its output read as lm_head reads the stream: dotted with ‘${t}’'s row of lm_head, ${scale}.` +
    (off ? " With parts off, the number after ← is the term with every part on." : ""));
  const gap = s.logits[target] - s.logits[rival];
  write($("why-against-note"), `‘${t}’ rather than ‘${r}’${end(rival)}: ${fmt(s.logits[target], 3)} − ${fmt(s.logits[rival], 3)} = ` +
    `${fmt(gap, 3)}. Softmax turns a gap of g into odds of e^g: ${fmt(Math.exp(gap), 2)} to 1 ` +
    `(${fmt(probs[target], 3)} against ${fmt(probs[rival], 3)}). Each bar is a part's term for ‘${t}’ minus its term for ‘${r}’.`);
}

// rows of [part, term, term with every part on (or null)], largest first, as bars left (away) or right (toward)
function drawTerms(rows, terms) {
  const sorted = terms.slice().sort((a, b) => b[1] - a[1]);
  const largest = Math.max(1e-12, ...sorted.map(([, v, before]) => Math.max(Math.abs(v), Math.abs(before ?? 0))));
  rows.forEach((row, n) => {
    hide(row.node, n >= sorted.length);
    if (n >= sorted.length) return;
    const [name, value, before] = sorted[n], width = `${(Math.abs(value) / largest * 100).toFixed(1)}%`;
    write(row.name, name);
    row.node.classList.toggle("chosen", name === why.shownPart);
    if (!rows.some((r) => r.node === document.activeElement)) row.node.setAttribute("tabindex", n === 0 ? "0" : "-1");
    row.node.setAttribute("aria-pressed", String(name === why.shownPart));
    restyle(row.left, "width", value < 0 ? width : "0%");
    restyle(row.right, "width", value > 0 ? width : "0%");
    write(row.value, fmt(value, 3) + (before !== null && before !== undefined ? ` ← ${fmt(before, 3)}` : ""));
    row.node.setAttribute("aria-label", `${name}: ${row.value.textContent}`);
  });
}

// What one part writes at this position, read through lm_head as a whole: the characters its output
// makes likelier and less likely (its terms in every logit), most first.
function drawPartWrites(parts, i) {
  const byTerm = (p) => p.terms[Number($("why-target").value)];
  const part = parts.find((p) => p.name === state.why.part) || parts.slice().sort((a, b) => byTerm(b) - byTerm(a))[0];
  why.shownPart = part.name;
  const order = Array.from(part.terms, (v, t) => [v, t]).sort((a, b) => b[0] - a[0]);
  const list = (pairs) => pairs.map(([v, t]) => `‘${label(t)}’ ${v > 0 ? "+" : ""}${fmt(v, 3)}`).join(", ");
  const who = part.name === "embeddings" ? "the embeddings write" : `${part.name} writes`;
  write($("why-part"), `What ${who} at position ${i}, read through lm_head: it raises ${list(order.slice(0, 5))}; ` +
    `it lowers ${list(order.slice(-5).reverse())}. (Pick a part above to read another.)`);
}

return { buildWhy, drawWhy, section, why };
})();
