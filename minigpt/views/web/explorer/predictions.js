// predictions.js: what the model predicts next, under the sampling filters. A part of the
// explorer page (state.js lists the parts).

const Predictions = (() => {
const { $, BOS, BOUNDARY, DATA, N, V, explain, label, options, rowOf, selectCell, state, switchedOff, tokenOf } = State;
const { appendAll, el, fmt, hide, reclass, restyle, setData, write } = Drawing;
const { baselineOf } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="predict" aria-labelledby="predict-title">
  <h2 id="predict-title">What the model predicts next</h2>
  <div class="controls" id="filters">
    <label>temperature <input id="temperature" type="range" min="0.05" max="3" step="0.05"> <output id="temperature-value" for="temperature"></output></label>
    <label>top-k <input id="top-k" type="range" min="0" step="1"> <output id="top-k-value" for="top-k"></output></label>
    <label>top-p <input id="top-p" type="range" min="0.05" max="1" step="0.05"> <output id="top-p-value" for="top-p"></output></label>
  </div>
  <p class="muted">The sliders filter as <code>minigpt sample</code> does: the end token is ruled out at the first position,
  then temperature, top-k, top-p. Bars show the probabilities a draw is made from; what the filters remove is greyed.</p>
  <p id="loss" class="note"></p>
  <div class="predict-two">
    <div class="scroll" tabindex="0" role="region" aria-label="predictions at every position, scroll sideways"><div id="predictions"></div></div>
    <div><h3 id="next-title">Every character, after the selected position</h3><div id="next-chart"></div></div>
  </div>
</section>`;

const TOP = 5;
const predictions = { rows: [], chart: [] };

function buildPredictions() {
  for (let i = 0; i < N; i++) {
    const choices = Array.from({ length: Math.min(TOP, V) }, () => {
      const char = el("span", { class: "char" }), bar = el("span", { class: "bar" }), p = el("span", { class: "p" });
      return { node: el("span", { class: "choice" }, char, bar, p), char, bar, p };
    });
    const row = { node: el("div", { class: "prediction" }), after: el("span", { class: "after" }), next: el("span", { class: "next" }),
      model: el("span", { class: "model" }), choices };
    row.node.append(row.after, el("span", { class: "bars" }, ...choices.map((c) => c.node)), row.next, row.model);
    row.node.addEventListener("click", () => selectCell(i, null));
    predictions.rows.push(row);
  }
  $("predictions").append(...predictions.rows.map((r) => r.node));
  for (let n = 0; n < V; n++) {
    const char = el("span", { class: "char" }), bar = el("span", { class: "bar" }), raw = el("span", { class: "raw" }), p = el("span", { class: "p" });
    const ghost = el("span", { class: "ghost" }); // with parts off: the probability with every part on
    predictions.chart.push({ node: el("div", { class: "next-bar" }, char, el("span", { class: "track" }, raw, bar, ghost), p), char, bar, raw, ghost, p });
  }
  appendAll($("next-chart"), predictions.chart.map((c) => c.node)); // a bar a character: a vocabulary may hold 100,000
  // a character in the chart is the one the why panel explains
  predictions.chart.forEach((c) => c.node.addEventListener("click", () => {
    explain({ target: tokenOf(c.node.dataset.token) });
    $("why").scrollIntoView({ block: "nearest" });
  }));
}

// for position i: the model's probabilities, and those a draw would use after the filters
function distributions(view, i, filters) {
  const logits = view.steps[i].logits;
  const filtered = MiniGPTModel.softmax(MiniGPTModel.filterLogits(logits, { ...filters, first: i === 0, bos: BOS }));
  return { probs: MiniGPTModel.softmax(Array.from(logits)), filtered };
}

// with parts off, the model's probabilities at position i with every part on (walk.js's baseline); else null
const allOnProbs = (view, i) => (switchedOff() ? MiniGPTModel.softmax(Array.from(baselineOf(view)[i].logits)) : null);

function drawPredictions() {
  const view = state.view, T = view.tokens.length, filters = options();
  predictions.rows.forEach((row, i) => {
    hide(row.node, i >= T);
    if (i >= T) return;
    const { probs, filtered } = distributions(view, i, filters);
    const actual = i + 1 < T ? view.tokens[i + 1] : BOS; // the next character, or the end
    const best = probs.map((p, t) => [p, t]).sort((a, b) => b[0] - a[0]).slice(0, TOP);
    row.node.classList.toggle("worked", i === rowOf(view));
    row.after.textContent = `after “${BOUNDARY}${view.kept.slice(0, i).join("")}”`;
    best.forEach(([p, t], n) => {
      const c = row.choices[n], removed = filtered[t] === 0;
      reclass(c.node, `choice${t === actual ? " actual" : ""}${removed ? " removed" : ""}`);
      c.node.title = `${label(t)}: ${fmt(p, 4)} from the model, ${fmt(filtered[t], 4)} after the filters`;
      write(c.char, label(t));
      restyle(c.bar, "width", `${Math.max(1, Math.round(filtered[t] * 70))}px`);
      // the model's own probability, where the filters changed it, written beside (not only in the title)
      write(c.p, fmt(filtered[t], 2));
    });
    // the model's own probabilities where the filters changed them, written out (a title reaches neither a
    // keyboard nor a finger)
    const filteredAway = best.some(([p, t]) => Math.abs(filtered[t] - p) >= 0.005);
    hide(row.model, !filteredAway);
    if (filteredAway) write(row.model, `before the filters: ${best.map(([p, t]) => `${label(t)} ${fmt(p, 2)}`).join(", ")}`);
    const allOn = allOnProbs(view, i);
    row.next.textContent = `next is ${label(actual)}: p = ${fmt(probs[actual], 3)}, −log p = ${fmt(-Math.log(probs[actual]), 2)}` +
      (allOn ? ` (every part on: p = ${fmt(allOn[actual], 3)})` : "");
  });
  drawNextChart(filters);
}

// The name's loss: drawn at every redraw, seen or not (a cheap line that other text points to,
// and that find-in-page or a screen reader may read while it is out of sight)
function drawLoss() {
  const view = state.view, T = view.tokens.length;
  let nats = 0, natsAllOn = 0;
  view.steps.forEach((s, i) => {
    const actual = i + 1 < T ? view.tokens[i + 1] : BOS, allOn = allOnProbs(view, i);
    nats -= Math.log(MiniGPTModel.softmax(Array.from(s.logits))[actual]);
    if (allOn) natsAllOn -= Math.log(allOn[actual]);
  });
  const off = state.off.heads.length + state.off.attention.length + state.off.mlp.length;
  // the empty name's one prediction is the end, which sampling rules out at the first position: no loss to speak of
  $("loss").textContent = T === 1 ? "Type a name for its loss: the empty name's only prediction would be the end, which " +
    "a name never has first (sampling rules it out)." :
    `Loss of “${view.kept.join("")}”${off ? `, with ${off} part${off > 1 ? "s" : ""} off` : ""}: ${fmt(nats / T, 3)} nats per token` +
    (off ? ` (every part on: ${fmt(natsAllOn / T, 3)})` : "") +
    ` (${T} predicted tokens: ${T - 1} character${T > 2 ? "s" : ""} and the end; the model's own probabilities, before any filter). ` +
    `A uniform guess: log(${V}) = ${fmt(Math.log(V), 3)}` +
    (DATA.roles.unigram ? `; guessing from character frequencies alone, ${fmt(DATA.roles.unigram, 3)}` : "") +
    `. Lower is better: the loss is the mean of −log p over the predicted tokens, in nats.`;
}

function drawNextChart(filters = options()) {
  const view = state.view, i = rowOf(view);
  const { probs, filtered } = distributions(view, i, filters);
  const order = probs.map((_, t) => t).sort((a, b) => probs[b] - probs[a]), allOn = allOnProbs(view, i);
  const kept = filtered.filter((p) => p > 0).length;
  $("next-title").textContent = `Every next token after “${BOUNDARY}${view.kept.slice(0, i).join("")}”: ${kept} of ${V} kept` +
    (allOn ? "; outlined, and after ←: with every part on" : "");
  order.forEach((t, n) => {
    const c = predictions.chart[n], removed = filtered[t] === 0;
    reclass(c.node, `next-bar${removed ? " removed" : ""}`);
    setData(c.node, "token", label(t));
    setData(c.node, "p", String(filtered[t]));
    write(c.char, label(t));
    restyle(c.raw, "width", `${(probs[t] * 100).toFixed(1)}%`);
    restyle(c.bar, "width", `${(filtered[t] * 100).toFixed(1)}%`);
    hide(c.ghost, !allOn);
    if (allOn) restyle(c.ghost, "width", `${(allOn[t] * 100).toFixed(1)}%`);
    c.ghost.title = allOn ? `with every part on: ${fmt(allOn[t], 3)}` : "";
    write(c.p, (removed ? `removed (${fmt(probs[t], 3)})` : fmt(filtered[t], 3)) + (allOn ? ` ← ${fmt(allOn[t], 3)}` : ""));
  });
}

return { buildPredictions, drawLoss, drawPredictions, predictions, section };
})();
