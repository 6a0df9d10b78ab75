// walk.js: one position through the whole model, one operation a line in model.py's order and
// with its names, from the embeddings to the probabilities of the next character; how much each
// sublayer moves the residual stream; and, with parts switched off, what changed at each
// operation against the model with every part on. A part of the explorer page (state.js lists
// the parts).

const Walk = (() => {
const { $, D, V, changed, config, isOn, label, options, rowOf, state, switchedOff } = State;
const {
  el, fmt, frame, largest, overlay, paintStrips, projectionSum, readable, restyle, roving, tokenIndex, wholeIndex, write
} = Drawing;
const { baselineOf } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="walk" aria-labelledby="walk-title">
  <h2 id="walk-title">One position through the whole model</h2>
  <p class="muted" id="walk-note"></p>
  <h3 id="sizes-title">How far each sublayer moves the residual stream x (the size ‖v‖ = √Σv², at this position)</h3>
  <div class="scroll" tabindex="0" role="region" aria-labelledby="sizes-title"><table id="walk-sizes" class="sizes"></table></div>
  <div class="scroll" tabindex="0" role="region" aria-label="every operation, scrolls sideways"><div id="walk-steps"></div></div>
</section>`;

const walk = { lines: [], sizes: [], picture: null, numbers: null };

// Each operation: a key (the console API's name for it), what it is, and its vector in a
// position's record from model.js's forward (`s`). `layer` marks the layer it belongs to.
function walkOperations() {
  const gains = config.norm_scale ? " × gains" : "", E = config.n_embd, act = config.activation;
  const ops = [
    { key: "embedded", what: "wte[token] + wpe[position]", of: (s) => s.embedded },
    { key: "x", what: "emb_norm: rmsnorm → the stream x", of: (s) => s.layers[0].residual },
  ];
  for (let l = 0; l < config.n_layer; l++) {
    const L = (s) => s.layers[l];
    ops.push(
      { key: `layer${l}.attn_norm`, layer: l, what: `layer ${l} attn_norm: rmsnorm(x)${gains}`, of: (s) => L(s).a },
      { key: `layer${l}.heads`, layer: l, what: "every head's output, joined", of: (s) => L(s).out, heads: true },
      { key: `layer${l}.attn_wo`, layer: l, what: "× attn_wo: what attention adds", of: (s) => L(s).attnOut, adds: "attention",
        sum: ["attn_wo", (s) => L(s).out, `layer${l}.heads`] },
      { key: `layer${l}.after_attn`, layer: l, what: "x + that", of: (s) => L(s).afterAttention, stream: true },
      { key: `layer${l}.mlp_norm`, layer: l, what: `mlp_norm: rmsnorm(x)${gains}`, of: (s) => L(s).m },
      { key: `layer${l}.mlp_fc1`, layer: l, what: `× mlp_fc1 [${4 * E}×${E}]`, of: (s) => L(s).fc1, units: true,
        sum: ["mlp_fc1", (s) => L(s).m, `layer${l}.mlp_norm`] },
      { key: `layer${l}.${act}`, layer: l, what: act === "gelu" ? "gelu: x·Φ(x)" : "relu: below 0 becomes 0", of: (s) => L(s).hidden, zeroes: true },
      { key: `layer${l}.mlp_fc2`, layer: l, what: "× mlp_fc2: what the MLP adds", of: (s) => L(s).mlpOut, adds: "mlp",
        sum: ["mlp_fc2", (s) => L(s).hidden, `layer${l}.${act}`] },
      { key: `layer${l}.after_mlp`, layer: l, what: "x + that", of: (s) => L(s).afterMLP, stream: true },
    );
  }
  if (config.final_norm) ops.push({ key: "final_norm", what: `final_norm: rmsnorm(x)${gains}`, of: (s) => s.final });
  ops.push({ key: "lm_head", what: `× lm_head [${V}×${E}]: logits`, of: (s) => s.logits, tokens: true },
    { key: "softmax", what: "softmax: next-token probabilities", of: (s) => Float64Array.from(MiniGPTModel.softmax(Array.from(s.logits))), tokens: true });
  return ops;
}

// a strip's width: at most 8px a number, about 512px for the longest vector (the MLP's hidden units)
const cellPx = (n) => Math.max(1, Math.min(8, Math.floor(512 / n)));
function sized(node, n) {
  node.style.width = `${n * cellPx(n) + 2}px`;
  return node;
}

// how many numbers an operation's vector has
const opLength = (op) => (op.units || op.zeroes ? 4 * config.n_embd : op.tokens ? V : config.n_embd);

function buildWalk() {
  const holder = $("walk-steps");
  let layer = null;
  for (const op of walkOperations()) {
    if (op.layer !== undefined && op.layer !== layer) {
      layer = op.layer;
      const header = el("h3", { class: "walk-layer", "data-layer": layer }, `layer ${layer}`);
      walk.lines.push({ header });
      holder.append(header);
    }
    const n = opLength(op);
    const frames = op.heads ? Array.from({ length: config.n_head }, () => sized(frame(D), D)) : [sized(frame(n), n)];
    const line = { op, frames, what: el("span", { class: "what" }, op.what), note: el("span", { class: "note-text" }), diff: sized(frame(n), n) };
    line.node = el("div", { class: "walk-step", "data-key": op.key }, line.what, el("span", { class: "strips" }, ...frames),
      el("span", { class: "diff-cell" }, line.diff), line.note);
    walk.lines.push(line);
    holder.append(line.node);
  }
  roving(walk.lines.filter((line) => line.op).flatMap((line) => [...line.frames, line.diff]));
  walk.picture = overlay(holder, holder, measureWalk, () => changed("resized", "walk"));
  const table = $("walk-sizes");
  table.append(el("thead", {}, el("tr", {}, ...["layer", "‖x‖ it reads", "‖attention adds‖", "‖MLP adds‖", "‖x‖ after"]
    .map((t) => el("th", { scope: "col" }, t)))));
  const body = el("tbody");
  for (let l = 0; l < config.n_layer; l++) {
    const cells = Array.from({ length: 4 }, () => { const bar = el("span", { class: "bar" }), num = el("span"); return { td: el("td", {}, bar, num), bar, num }; });
    walk.sizes.push(cells);
    body.append(el("tr", {}, el("th", { scope: "row" }, String(l)), ...cells.map((c) => c.td)));
  }
  table.append(body);
}

// where each strip lies on the canvas (every frame, inside its border)
function measureWalk(at) {
  return { frames: walk.lines.filter((line) => line.op).map((line) => ({ frames: line.frames.map((f) => at(f, 1)), diff: at(line.diff, 1) })) };
}


// a linear layer's number as the sum it is, Σⱼ input[j]·W[n, j] (a part switched off is its mean or 0 instead)
function madeBy(op, s, values) {
  const [weight, inputOf, inputName] = op.sum, l = op.layer, part = op.adds === "mlp" ? "mlp" : "attention";
  if (op.adds && !isOn(part, l)) {
    return () => `= ${state.off.mode === "mean" ? "its mean output" : "0"}: this layer's ${part === "mlp" ? "MLP" : "attention"} is off`;
  }
  const W = state.model.layers[l][weight], input = inputOf(s);
  return (n) => projectionSum(W, `layer${l}.${weight}`, input, inputName, n, values[n]);
}

const norm = (v) => Math.sqrt(Array.from(v).reduce((a, x) => a + x * x, 0));
// the units with the largest values, as "#12 2.31, #40 1.90" (units.js tells what each responds to)
const firingMost = (v, count) => Array.from(v, (x, n) => [x, n]).sort((a, b) => b[0] - a[0]).slice(0, count)
  .map(([x, n]) => `#${n} ${fmt(x, 2)}`).join(", ");

// what each line's note says about its vector (and with parts off, about what changed)
function walkNote(line, values, s, l, i) {
  const { op } = line;
  if (op.adds) {
    const reads = op.adds === "attention" ? s.layers[l].residual : s.layers[l].afterAttention;
    const off = isOn(op.adds, l) ? "" : ` (off: ${state.off.mode === "mean" ? "its mean" : "0"})`;
    return `‖adds‖ ${fmt(norm(values), 2)} to ‖x‖ ${fmt(norm(reads), 2)}${off}`;
  }
  if (op.stream) return `‖x‖ ${fmt(norm(values), 2)}`;
  if (op.units) return `most above 0: ${firingMost(values, 2)}`;
  if (op.zeroes) { // the units named by what they do: the ones that fire most after the nonlinearity
    const before = s.layers[l].fc1, negative = Array.from(before).filter((x) => x < 0).length;
    return `fire most: ${firingMost(values, 3)}; ` + (config.activation === "gelu" ? `${negative} of ${values.length} below 0, pulled toward 0`
      : `${negative} of ${values.length} zeroed`);
  }
  if (op.heads) {
    const off = Array.from({ length: config.n_head }, (_, h) => h).filter((h) => !isOn("head", l, h));
    const all = !isOn("attention", l);
    if (all) return "this layer's attention is off";
    return off.length ? `head${off.length > 1 ? "s" : ""} ${off.join(", ")} off` : `heads ${Array.from({ length: config.n_head }, (_, h) => h).join(" | ")}`;
  }
  if (op.tokens) {
    const order = Array.from(values, (x, t) => [x, t]).sort((a, b) => b[0] - a[0]).slice(0, 3);
    const likeliest = `likeliest: ${order.map(([x, t]) => `${label(t)} ${fmt(x, op.key === "softmax" ? 3 : 2)}`).join(", ")}`;
    const { temperature, topK, topP } = options();
    const filtered = temperature !== 1 || topK > 0 || topP < 1;
    // the model's own probabilities: the predictions' bars below are after the sampling filters
    return op.key === "softmax" && filtered ? `${likeliest} (the model's own, at temperature 1; the bars under ` +
      `“What the model predicts next” use the sampling filters: temperature ${fmt(temperature, 2)}` +
      `${topK ? `, top-k ${topK}` : ""}${topP < 1 ? `, top-p ${fmt(topP, 2)}` : ""})` : likeliest;
  }
  return op.key === "embedded" ? `token ${label(state.view.tokens[i])}, position ${i}` : "";
}

function drawWalk() {
  const view = state.view, i = rowOf(view), s = view.steps[i], T = view.tokens.length;
  const offNow = Boolean(switchedOff()), base = offNow ? baselineOf(view)[i] : null;
  write($("walk-title"), `Row ${i} (“${label(view.tokens[i])}”) through the whole model`);
  const numbers = {}, strips = [];
  let firstDiffer = null;
  const holder = $("walk-steps");
  if (holder.classList.contains("compared") !== offNow) { // the column of what changed comes and goes: measured again
    holder.classList.toggle("compared", offNow);
    walk.picture.spots = null;
  }
  const spots = walk.picture.place(); // null while the part is hidden
  let n = 0;
  for (const line of walk.lines) {
    if (!line.op) { line.header.classList.toggle("chosen", Number(line.header.dataset.layer) === state.layer); continue; }
    const { op } = line, values = op.of(s), l = op.layer, spot = spots && spots.frames[n++];
    numbers[op.key] = values;
    const scale = largest(values);
    if (op.heads) {
      line.frames.forEach((f, h) => {
        const part = values.subarray(h * D, (h + 1) * D), off = !isOn("head", l, h) || !isOn("attention", l);
        readable(f, `layer${l}.heads`, part, null, wholeIndex(h * D)); // head h's slice of the joined heads
        f.classList.toggle("chosen", l === state.layer && h === state.head);
        f.classList.toggle("off", off);
        if (spot) strips.push([part, scale, spot.frames[h]]);
      });
    } else {
      // a logit as the sum it is: what lm_head's row for the token reads off the stream
      const read = config.final_norm ? "final_norm" : `layer${config.n_layer - 1}.after_mlp`; // the walk's name for it
      const logit = (t) => projectionSum(state.model.weights.lm_head, "lm_head", s.final, read, t, values[t], tokenIndex);
      readable(line.frames[0], op.key, values, op.key === "lm_head" ? logit : op.sum ? madeBy(op, s, values) : null,
        op.tokens ? tokenIndex : String);
      if (spot) strips.push([values, scale, spot.frames[0]]);
    }
    let differs = false;
    if (base) {
      const before = op.of(base), diff = Float64Array.from(values, (x, k) => x - before[k]);
      differs = diff.some((x) => Math.abs(x) > 1e-12);
      if (differs && firstDiffer === null) firstDiffer = op.key;
      readable(line.diff, `${op.key} − with every part on`, diff, (k) => `= ${fmt(values[k], 4)} − ${fmt(before[k], 4)}`,
        op.tokens ? tokenIndex : String);
      if (spot && differs) strips.push([diff, largest(values, before), spot.diff]); // a part off may leave `values` all 0
    }
    restyle(line.diff, "visibility", base && differs ? "" : "hidden");
    line.node.classList.toggle("first-differs", op.key === firstDiffer);
    write(line.note, walkNote(line, values, s, l, i) + (op.key === firstDiffer ? " ← the first change" : ""));
  }
  if (spots) {
    const { ctx, canvas } = walk.picture;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    paintStrips(ctx, strips);
  }
  drawSizes(s);
  write($("walk-note"), `Position ${i} of ${T}: every operation the model does to it, in model.py's order (layer ${state.layer}, ` +
    `head ${state.head} outlined). Hover, tap or focus a strip to read its numbers; each strip has its own scale, red above 0 and blue below.` +
    (offNow ? " With parts off, the dashed strip on the right is what changed against every part on: this minus that, on the scale of the two." : ""));
  walk.numbers = { i, numbers, firstDiffer };
}

// per layer, the size of the stream it reads and of what each sublayer adds to it
function drawSizes(s) {
  const rows = s.layers.map((layer) => [layer.residual, layer.attnOut, layer.mlpOut, layer.afterMLP].map(norm));
  const top = Math.max(1e-12, ...rows.flat());
  rows.forEach((row, l) => row.forEach((x, c) => {
    const cell = walk.sizes[l][c];
    restyle(cell.bar, "width", `${Math.max(1, Math.round((x / top) * 80))}px`);
    write(cell.num, fmt(x, 2));
  }));
}

// every operation's vector at position i of a forward pass, by key (for the console API and the tests)
function walkNumbers(view, i) {
  return Object.fromEntries(walkOperations().map((op) => [op.key, Array.from(op.of(view.steps[i]))]));
}

return { buildWalk, drawWalk, section, walk, walkNumbers };
})();
