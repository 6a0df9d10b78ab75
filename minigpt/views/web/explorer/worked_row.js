// worked_row.js: one row worked out (q against every k, the scores, the mask, softmax, and × V),
// and where q, k and v come from. A part of the explorer page (state.js lists the parts).

const WorkedRow = (() => {
const { $, D, N, changed, colOf, config, headOff, label, rowOf, selectCell, setHover, state } = State;
const {
  ACCENT, INK, MUTED_INK, el, fmt, fontOf, frame, hide, largest, overlay, paintNamed, paintStrips, readable,
  projectionSum, reclass, restyle, rms, roving, say, textPicture, wholeIndex, write
} = Drawing;

// the section of where q, k and v come from
const flowSection = `<section id="flow" aria-labelledby="flow-title">
  <h2 id="flow-title">Where q, k and v come from</h2>
  <p class="muted" id="flow-note"></p>
  <div class="scroll" tabindex="0" role="region" aria-label="the flow, scrolls sideways"><div id="flow-steps"></div></div>
</section>`;

// its section of the page (the registry puts it in place)
const section = `<section id="row" aria-labelledby="math-title">
  <h2 id="math-title">One row, worked out</h2>
  <p class="formula" id="math-formula"></p>
  <p class="muted" id="math-legend"></p>
  <p class="muted scroll-hint" id="math-scroll">The table is wider than the screen: scroll it sideways; the position column stays.</p>
  <div class="scroll" tabindex="0" role="region" aria-label="the worked row, scrolls sideways"><div class="painted"><table id="math-table" class="math"></table></div></div>
</section>`;

// Every number and strip of it changes when a character is typed (the new character becomes the
// row worked out), so they are painted on a canvas over the table. The table stays for its
// structure: its cells are empty, say their numbers in aria-label, and carry the hover and the
// click. Its lines have one height, so line j lies j line heights below line 0, and the sums'
// row below the last line shown: measured once, not at each keystroke.

const math = { lines: [], picture: null };

function buildMath() {
  const table = $("math-table");
  // fixed column widths: a new number in a cell does not make the browser lay out the whole table again
  document.documentElement.style.setProperty("--strip", `${D * Math.max(3, 56 / D) + 8}px`);
  table.append(el("thead", {}, el("tr", {}, ...[["j", "the position read"], ["kⱼ", "its key"], ["q⊙kⱼ", "q times kⱼ, number by number"],
    ["q·kⱼ", "their sum"], ["÷√d", "the raw score"], ["mask", "0 up to this position, −∞ after"],
    ["weight", "softmax of the scores"], ["weight·vⱼ", "its value, scaled"]].map(([t, title]) => el("th", { scope: "col", title }, t)))));
  const body = el("tbody");
  math.q = frame(D);
  body.append(el("tr", { class: "query" }, el("th", { scope: "row", id: "q-label" }, "q"), el("td", {}, math.q),
    el("td", { colspan: 6, class: "muted" }, "the query of this position, against every key below")));
  for (let j = 0; j < N; j++) {
    const line = {
      tr: el("tr", { "data-j": j }),
      key: frame(D), product: frame(D), scaled: frame(D),
      label: el("th", { scope: "row" }), dot: el("td"), score: el("td"), mask: el("td"), weight: el("td", { class: "weight" }),
    };
    line.tr.append(line.label, el("td", {}, line.key), el("td", {}, line.product), line.dot, line.score, line.mask, line.weight,
      el("td", {}, line.scaled));
    line.tr.addEventListener("mouseenter", () => setHover(j));
    line.tr.addEventListener("mouseleave", () => setHover(null));
    line.tr.addEventListener("click", () => { if (j <= rowOf(state.view)) selectCell(rowOf(state.view), j); });
    math.lines.push(line);
    body.append(line.tr);
  }
  math.out = frame(D);
  math.sum = el("td");
  math.outNote = el("td", { colspan: 5, class: "muted" });
  math.total = el("tr", { class: "total" }, el("th", { scope: "row" }, "Σ"), math.outNote, math.sum, el("td", {}, math.out));
  body.append(math.total);
  table.append(body);
  math.picture = overlay(table.parentNode, table.querySelector("tr.query"), measureMath, drawMath);
}

// Line 0's strips and numbers, the height of a line, and the sums' row as it would lie below no line.
function measureMath(at, last) {
  const [first, second] = math.lines, shown = math.lines.filter((line) => !line.tr.hidden).length;
  const pitch = second && !second.tr.hidden ? at(second.tr)[1] - at(first.tr)[1] : last ? last.pitch : 0;
  const up = ([x, y, w, h]) => [x, y - shown * pitch, w, h];
  const spots = { q: at(math.q, 1), pitch, out: up(at(math.out, 1)), sum: up(at(math.sum)),
                  font: fontOf(first.dot), bold: fontOf(first.dot, "bold") };
  for (const part of ["key", "product", "scaled"]) spots[part] = at(first[part], 1); // inside the frame's border
  for (const part of ["dot", "score", "mask", "weight"]) spots[part] = at(first[part]);
  spots.height = at(first.tr)[1] + N * pitch + at(math.total)[3]; // down to the sums below the longest name
  document.documentElement.style.setProperty("--worked-height", `${Math.ceil(spots.height)}px`);
  return spots;
}

// a number at the right of its cell, 3px in as the table's padding (or from its left edge)
function paintNumber(ctx, text, [x, y, w, h], ink, font, align = "right") {
  ctx.drawImage(textPicture(text, ink, font, w, h, align), x, y, w, h);
}

// the worked row on its canvas: strips [values, scale, part, j, faded] (j lines down) and each line's numbers
function paintMath(strips, lines, sum) {
  const { ctx, canvas } = math.picture, spots = math.picture.place();
  if (!spots) return;
  const spot = (part, j) => { const [x, y, w, h] = spots[part]; return [x, y + j * spots.pitch, w, h]; };
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  paintStrips(ctx, strips.map(([values, scale, part, j, faded]) => [values, scale, spot(part, j), 0, faded ? 0 : values.length]));
  for (const { j, shown, ink, bar } of lines) {
    for (const part of ["dot", "score", "mask"]) paintNumber(ctx, shown[part], spot(part, j), ink, spots.font);
    const [x, y, , h] = spot("weight", j);
    ctx.fillStyle = ACCENT;
    ctx.beginPath();
    ctx.roundRect(x + 3, y + h / 2 - 5, bar, 10, 2); // the weight as a bar, 40px for 1
    ctx.fill();
    paintNumber(ctx, shown.weight, [x + 3 + bar + 4, y, 40, h], ink, spots.font, "left");
  }
  paintNumber(ctx, sum, spot("sum", lines.length), INK, spots.bold);
}

function drawMath() {
  const view = state.view, T = view.tokens.length, { layer: l, head: h } = state;
  const i = rowOf(view), chosen = colOf(view), labels = view.tokens.map(label), start = h * D;
  const slice = (v) => v.subarray(start, start + D);
  const at = view.steps[i].layers[l], q = slice(at.q);
  const read = state.off.unmasked ? T : i + 1; // the positions the row reads: all of them with the mask off
  write($("math-formula"), `weights = softmax(q·kⱼ / √d${state.off.unmasked ? ", every j: the mask is off" :
    ", with −∞ for every later j"})\u00a0\u00a0 out = Σⱼ weightⱼ vⱼ`);
  const keys = view.steps.slice(0, read).map((s) => slice(s.layers[l].k));
  const values = view.steps.slice(0, read).map((s) => slice(s.layers[l].v));
  const products = keys.map((k) => k.map((x, n) => x * q[n]));
  const weights = at.weights[h], scores = at.scores[h];
  const scaledValues = values.map((v, j) => v.map((x) => x * weights[j]));
  const out = slice(at.out);
  const qk = largest(q, ...keys), prod = largest(...products), val = largest(out, ...scaledValues);
  write($("math-title"), `Row ${i} (“${labels[i]}”) worked out, layer ${l}, head ${h}`);
  write($("q-label"), `q${i}`);
  math.picture.place(); // before the lines are shown or hidden: measured on a laid-out table
  const strips = [[q, qk, "q", 0], [out, val, "out", T]], lines = [], sum = weights.reduce((a, b) => a + b, 0).toFixed(3);
  const from = h * D, at_ = wholeIndex(from); // the head's slice of q, k, v and the heads' joined output
  readable(math.q, `q${i}`, q, null, at_);
  const why = headOff(l, h), mean = state.off.mode === "mean";
  write(math.outNote, why === "head" ? `this head is switched off: its output is ${mean ? "its mean output" : "0"}, not the weighted sum of the values →`
    : why ? `this layer's attention is off: the head still computes this sum, but attn_wo's output is replaced by ${mean ? "its mean" : "0"}`
      : "the weights add up to 1; the head's output is the weighted sum of the values →");
  readable(math.out, `layer${l}.heads`, out, (n) => (why === "head" ? (mean ? "= the head's mean output" : "= 0: the head is off")
    : `= Σⱼ weightⱼ·vⱼ[${n + from}]`), at_);
  say(math.sum, sum);
  math.lines.forEach((line, j) => {
    hide(line.tr, j >= T);
    if (j >= T) return;
    const future = j >= read;
    reclass(line.tr, future ? "future" : j === chosen ? "chosen" : "");
    write(line.label, `${j} ${labels[j]}`);
    for (const s of [line.key, line.product, line.scaled]) restyle(s, "visibility", future ? "hidden" : "");
    const shown = future ? { dot: "—", score: "—", mask: "−∞", weight: "0" }
      : { dot: fmt(scores[j] * Math.sqrt(D), 2), score: fmt(scores[j], 2), mask: "+0", weight: weights[j].toFixed(3) };
    for (const part of ["dot", "score", "mask", "weight"]) say(line[part], shown[part]);
    lines.push({ j, shown, ink: future ? MUTED_INK : INK, bar: future ? 0 : Math.round(weights[j] * 40) });
    if (future) return;
    readable(line.key, `k${j}`, keys[j], null, at_);
    readable(line.product, `q⊙k${j}`, products[j], (n) => `= q${i}[${n + from}] × k${j}[${n + from}] = ${fmt(q[n], 4)} × ` +
      `${fmt(keys[j][n], 4)}`, at_);
    readable(line.scaled, `weight${j}·v${j}`, scaledValues[j],
      (n) => `= weight${j} × v${j}[${n + from}] = ${fmt(weights[j], 4)} × ${fmt(values[j][n], 4)}`, at_);
    strips.push([keys[j], qk, "key", j], [products[j], prod, "product", j], [scaledValues[j], val, "scaled", j, why === "head"]);
  });
  paintMath(strips, lines, sum);
  write($("math-legend"), `d = ${D}, so ÷√d divides by ${fmt(Math.sqrt(D))}. Strips: red above 0, blue below; ` +
    `q and the keys share one scale, the products another, the values a third. ` + (state.off.unmasked
      ? "The mask is off: a later position's score counts like any other, so it takes weight too."
      : "A later position's score is −∞, so its weight is 0."));
  math.numbers = { i, layer: l, head: h, q, keys, products, scores, weights, values, scaledValues, out };
}

// the line of the arithmetic that the pointer is on, here or on its cell of the matrix
function drawHover() {
  math.lines.forEach((line, n) => line.tr.classList.toggle("hover", n === state.hover));
}

// ---- where q, k and v come from --------------------------------------------------------------

const flow = { frames: {}, labels: {}, picture: null };

function buildFlow() {
  const E = config.n_embd, gains = config.norm_scale ? " × the layer's norm gains" : "";
  const step = (name, what) => {
    flow.frames[name] = frame(E);
    flow.labels[name] = el("span", { class: "what" }, what);
    return el("div", { class: "flow-step" }, flow.labels[name], flow.frames[name], el("span", { class: "shape" }, `[${E}]`));
  };
  $("flow-steps").append(
    step("wte", "wte[token]"),
    step("wpe", "+ wpe[position]"),
    step("x0", "rmsnorm: the residual stream's start"),
    step("residual", "what the layer reads"),
    step("a", `rmsnorm${gains}`),
    step("q", "× W_Q → q"),
    step("k", "× W_K → k"),
    step("v", "× W_V → v"),
  );
  if (config.norm_scale) $("flow-steps").insertBefore(step("gains", "attn_norm's gains (colour: gain − 1)"), flow.frames.q.parentNode);
  // the weights themselves: the head's rows of W_Q, W_K and W_V, and its columns of attn_wo, a strip each
  // (↑ ↓ move between them)
  for (const name of ["wq", "wk", "wv", "wo"]) {
    flow.labels[name] = el("span", { class: "what" });
    const rows = Array.from({ length: D }, (_, r) => (flow.frames[`${name}${r}`] = frame(E)));
    roving(rows);
    $("flow-steps").append(el("div", { class: "flow-step weights" }, flow.labels[name], el("span", { class: "rows" }, ...rows),
      el("span", { class: "shape" }, name === "wo" ? `[${E}×${D}]` : `[${D}×${E}]`)));
  }
  flow.picture = overlay($("flow-steps"), $("flow-steps"),
    (at) => Object.fromEntries(Object.entries(flow.frames).map(([name, node]) => [name, at(node, 1)])),
    () => changed("resized", "flow"));
}

// attn_wo's columns for the head: column n holds what number n of the joined heads (of this head's
// slice) adds to each number of attention's output, attn_wo[k, n] × heads[n]
function attnWoColumns(W, layer, from, l, i) {
  const columns = [], E = W.rows, out = layer.out;
  for (let r = 0; r < D; r++) {
    const n = from + r, column = Float64Array.from({ length: E }, (_, k) => W.data[k * W.cols + n]);
    readable(flow.frames[`wo${r}`], `attn_wo[:, ${n}]`, column, (k) => `layer${l}.heads[${n}] × attn_wo[${k}, ${n}] = ` +
      `${fmt(out[n], 4)} × ${fmt(column[k], 4)} = ${fmt(out[n] * column[k], 4)}: what number ${n} of the heads adds to ` +
      `number ${k} of layer${l}.attn_wo at position ${i}`);
    columns.push(column);
  }
  write(flow.labels.wo, `attn_wo, columns ${from}–${from + D - 1}: how head ${state.head}'s output enters the stream, a ` +
    `column a number of it (layer${l}.attn_wo)`);
  return columns;
}

// The head's rows of a projection, each a readable strip: number j of row n is the weight a[j] is
// multiplied by on its way into q[n] (or k[n], v[n]), and the row's terms add up to that number
function weightRows(name, W, wName, input, inName, made, madeName, from, l) {
  const rows = [];
  for (let r = 0; r < D; r++) {
    const n = from + r, weights = W.data.subarray(n * W.cols, (n + 1) * W.cols);
    readable(flow.frames[`${name}${r}`], `${wName}[${n}]`, weights, (j) => `${inName}[${j}] × ${wName}[${n}, ${j}] = ` +
      `${fmt(input[j], 4)} × ${fmt(weights[j], 4)} = ${fmt(input[j] * weights[j], 4)}; the row's ${W.cols} terms add up to ` +
      `${madeName}[${n}] = ${fmt(made[n], 4)}`);
    rows.push(weights);
  }
  write(flow.labels[name], `${wName}, rows ${from}–${from + D - 1}: head ${state.head}'s slice, a row a number of ` +
    `${madeName.replace(/\d+$/, "")} (layer${l}.attn_${name})`);
  return rows;
}

function drawFlow() {
  const view = state.view, { layer: l, head: h } = state, i = rowOf(view), j = colOf(view), E = config.n_embd;
  const labels = view.tokens.map(label), token = view.tokens[i];
  const row = (W, n) => W.data.subarray(n * W.cols, (n + 1) * W.cols);
  const s = view.steps[i], layer = s.layers[l], keyLayer = view.steps[j].layers[l];
  const x0 = view.steps[i].layers[0].residual;
  const scale = largest(row(state.model.weights.wte, token), row(state.model.weights.wpe, i));
  const qkScale = largest(layer.q, keyLayer.k), from = h * D, to = (h + 1) * D;
  const strips = { // name: [values, scale, what a screen reader hears it called, and the head's slice]
    wte: [row(state.model.weights.wte, token), scale, `wte[“${labels[i]}”]`], wpe: [row(state.model.weights.wpe, i), scale, `wpe[${i}]`],
    x0: [x0, largest(x0), "x"], residual: [layer.residual, largest(layer.residual), l === 0 ? "x" : `layer${l - 1}.after_mlp`],
    a: [layer.a, largest(layer.a), `layer${l}.attn_norm`], // the walk's names for the same vectors
    q: [layer.q, qkScale, `q${i}`, from, to], k: [keyLayer.k, qkScale, `k${j}`, from, to],
    v: [keyLayer.v, largest(keyLayer.v), `v${j}`, from, to],
  };
  // a projection's number as the sum it is: q[n] = Σⱼ a[j]·W_Q[n, j], its largest terms named, so that a hand
  // check does not stop at "× W_Q" (k and v are made the same way, from the key position's own a)
  const keyA = keyLayer.a, L = state.model.layers[l];
  const a = `layer${l}.attn_norm`, atKey = j === i ? a : `${a} at position ${j}`;
  const made = { q: [L.attn_wq, "W_Q", layer.a, a], k: [L.attn_wk, "W_K", keyA, atKey], v: [L.attn_wv, "W_V", keyA, atKey] };
  for (const [name, [values, , what]] of Object.entries(strips)) {
    const [W, wName, input, inName] = made[name] || [];
    readable(flow.frames[name], what, values, W ? (n) => projectionSum(W, wName, input, inName, n, values[n]) : null);
  }
  if (config.norm_scale) {
    const offOne = L.attn_norm.data.map((g) => g - 1); // a gain starts at 1: its colour is how far it moved
    strips.gains = [offOne, largest(offOne)];
    readable(flow.frames.gains, `layer${l}.attn_norm gains`, L.attn_norm.data, (n) => `${a}[${n}] = x[${n}] / rms(x) × ` +
      `gains[${n}] = ${fmt(layer.residual[n], 4)} / ${fmt(rms(layer.residual), 4)} × ${fmt(L.attn_norm.data[n], 4)}`);
  }
  const painted = Object.entries(strips).map(([name, [values, scale, , a, b]]) => [values, scale, name, a, b]);
  const columns = attnWoColumns(L.attn_wo, layer, from, l, i);
  columns.forEach((values, r) => painted.push([values, largest(...columns), `wo${r}`]));
  for (const [name, W, wName, input, inName, made, madeName] of [
    ["wq", L.attn_wq, "W_Q", layer.a, a, layer.q, `q${i}`], ["wk", L.attn_wk, "W_K", keyA, atKey, keyLayer.k, `k${j}`],
    ["wv", L.attn_wv, "W_V", keyA, atKey, keyLayer.v, `v${j}`]]) {
    const rows = weightRows(name, W, wName, input, inName, made, madeName, from, l), scale = largest(...rows);
    rows.forEach((values, r) => painted.push([values, scale, `${name}${r}`]));
  }
  paintNamed(flow.picture, painted);
  write(flow.labels.wte, `wte[“${labels[i]}”]`);
  write(flow.labels.wpe, `+ wpe[${i}]`);
  write(flow.labels.residual, l === 0 ? "layer 0 reads it as it is"
    : l === 1 ? "after layer 0 adds its attention and MLP" : `after layers 0–${l - 1} add their attention and MLP`);
  write(flow.labels.q, `× W_Q [${E}×${E}] → q${i}`);
  write(flow.labels.k, `× W_K → k${j} (of position ${j}, “${labels[j]}”)`);
  write(flow.labels.v, `× W_V → v${j}`);
  write($("flow-note"), `For row ${i} (“${labels[i]}”) and the selected cell's position ${j}, layer ${l}: every ` +
    `position's vector is made the same way, from its own token and position. Head ${h} uses numbers ` +
    `${h * D}–${(h + 1) * D - 1} of q, k and v (the others faded): the strips in the worked row above.`);
}


return { buildFlow, buildMath, drawFlow, drawHover, drawMath, flowSection, math, section };
})();
