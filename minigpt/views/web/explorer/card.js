// card.js: the model card and its loss curve. A part of the explorer page (state.js lists the
// parts).

const Card = (() => {
const { $, BOUNDARY, DATA, V, config, state, vocab } = State;
const { el } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="about-model" class="two" aria-label="the model and its training">
  <div><h2>The model</h2><div id="card"></div></div>
  <div><h2>How it trained</h2><div id="curve"></div></div>
</section>`;

function drawCard() {
  const c = DATA.card, m = config;
  const loss = (x) => (x === null || x === undefined ? "—" : x.toFixed(4));
  const facts = [
    ["parameters", `${c.parameters.toLocaleString("en")}: ${m.n_layer} layer${m.n_layer > 1 ? "s" : ""}, ${m.n_head} heads, ${m.n_embd} dims, block ${m.block_size}`],
    ["architecture", `${m.activation}, ${m.final_norm ? "final norm" : "no final norm"}, ${m.norm_scale ? "learned norm gains" : "no norm gains"}`],
    ["training", `step ${c.step.toLocaleString("en")}, validation loss ${loss(c.val_loss)} (best ${loss(c.best_val_loss)})`],
    ["data", c.data],
    ["vocabulary", `${V} tokens: ${vocab.join("")} and the boundary token ${BOUNDARY}`],
    ["checkpoint", c.checkpoint],
  ];
  $("card").replaceChildren(el("table", {}, ...facts.map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)))),
    el("details", {}, el("summary", {}, "the whole recipe"),
      el("pre", {}, Object.entries(DATA.config).map(([section, values]) =>
        `[${section}]\n` + Object.entries(values).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join("\n")).join("\n\n"))));
  drawCurve();
}

let curveMarker = null, curveX = null;

// the slider's step on the loss curve, and the run's own validation loss there (or at its last
// evaluation before it: the run evaluated every eval_interval steps, snapshots fall between)
function moveStepMarker(step) {
  const val = DATA.curve ? DATA.curve.val.filter(([s]) => s <= step).pop() : null;
  // with the mask off, the figure beside it is the one without the mask (on the checkpoint's weights, where measured)
  const over = DATA.mask_off, unmasked = state.off.unmasked && over && state.snapshot === null;
  const maskOff = unmasked ? ` (with the mask; with it off, ${over.unmasked.toFixed(3)} over the ${over.names})` : "";
  $("step-loss").textContent = !DATA.curve ? "" : !val ? "the run had not measured its validation loss yet" : val[0] === step ? `the run's validation loss here: ${val[1].toFixed(3)} nats per token${maskOff}`
    : `the run's last evaluation before it, at step ${val[0].toLocaleString("en")}: validation loss ${val[1].toFixed(3)}${maskOff}`;
  if (!curveMarker) return;
  curveMarker.setAttribute("x1", curveX(step));
  curveMarker.setAttribute("x2", curveX(step));
}

// the run's loss against step, from metrics.jsonl, as inline SVG, with two references: a uniform
// guess, log(V), and a guess from character frequencies alone (the unigram loss)
function drawCurve() {
  const curve = DATA.curve;
  if (!curve) return $("curve").replaceChildren(el("p", { class: "muted" }, "No metrics.jsonl beside the checkpoint, so no loss curve."));
  const uniform = Math.log(V), unigram = DATA.roles.unigram;
  const W = 420, H = 210, left = 44, right = 10, top = 10, bottom = 40;
  const all = [...curve.train, ...curve.val];
  // the steps span the curve's and the snapshots' (the slider's marker may sit before the first logged step)
  const steps = [...all.map((p) => p[0]), ...(DATA.snapshots ? DATA.snapshots.steps : [])], losses = [...all.map((p) => p[1]), uniform];
  const [x0, x1] = [-MiniGPTModel.maxOf(steps.map((x) => -x)), MiniGPTModel.maxOf(steps)];
  const [y0, y1] = [-MiniGPTModel.maxOf(losses.map((y) => -y)) - 0.05, MiniGPTModel.maxOf(losses) + 0.05];
  const x = (s) => left + ((s - x0) / Math.max(1, x1 - x0)) * (W - left - right);
  const y = (v) => top + ((y1 - v) / Math.max(1e-9, y1 - y0)) * (H - top - bottom);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("id", "curve-svg");
  svg.setAttribute("role", "img");
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  add("line", { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, class: "axis-line" });
  add("line", { x1: left, y1: top, x2: left, y2: H - bottom, class: "axis-line" });
  for (const v of [y0 + 0.05, (y0 + y1) / 2, y1 - 0.05]) add("text", { x: left - 4, y: y(v) + 3, "text-anchor": "end" }, v.toFixed(2));
  add("text", { x: left, y: H - bottom + 13, "text-anchor": "middle" }, x0.toLocaleString("en"));
  add("text", { x: W - right, y: H - bottom + 13, "text-anchor": "end" }, x1.toLocaleString("en"));
  add("text", { x: (left + W) / 2, y: H - 4, "text-anchor": "middle", class: "title" }, "optimizer step");
  add("text", { x: 10, y: (top + H - bottom) / 2, transform: `rotate(-90 10 ${(top + H - bottom) / 2})`, "text-anchor": "middle", class: "title" }, "loss (nats per token)");
  const reference = (v, text, cls) => {
    add("line", { x1: left, y1: y(v), x2: W - right, y2: y(v), class: `reference ${cls}` });
    add("text", { x: W - right - 2, y: y(v) - 3, "text-anchor": "end", class: `reference ${cls}` }, text);
  };
  reference(uniform, `uniform guess, log ${V} = ${uniform.toFixed(2)}`, "uniform");
  if (unigram) reference(unigram, `character frequencies alone: ${unigram.toFixed(2)}`, "unigram");
  const line = (points, cls) => add("polyline", { points: points.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: cls });
  line(curve.train, "train");
  if (curve.val.length > 1) line(curve.val, "val");
  curve.val.forEach(([s, v]) => add("circle", { cx: x(s), cy: y(v), r: 2, class: "val" }));
  const summary = [`training loss from ${curve.train.length ? curve.train[0][1] : "—"} at step ${x0}`];
  let bestText = "◯ best";
  if (curve.val.length) { // ringed on the curve and named in the legend (a label on the plot would cover the curve)
    const best = curve.val.reduce((a, b) => (b[1] < a[1] ? b : a));
    add("circle", { cx: x(best[0]), cy: y(best[1]), r: 4.5, class: "best" });
    bestText = `◯ best validation loss ${best[1].toFixed(3)} at step ${best[0].toLocaleString("en")}`;
    summary.push(`best validation loss ${best[1]} at step ${best[0]}`);
  }
  if (DATA.snapshots) { // where the step slider is: a line that moves with it
    curveMarker = add("line", { id: "step-marker", y1: top, y2: H - bottom, class: "marker" });
    curveX = x;
  }
  svg.setAttribute("aria-label", `Loss against step: ${summary.join("; ")}; a uniform guess gives ${uniform.toFixed(2)}.`);
  $("curve").replaceChildren(svg, el("p", { class: "legend" }, el("span", { class: "train" }, "— training (one batch)"), " ",
    el("span", { class: "val" }, "● validation"), " ", el("span", { class: "best" }, bestText)));
}

return { drawCard, moveStepMarker, section };
})();
