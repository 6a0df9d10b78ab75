// lens.js: each layer's guess, the logit lens. A part of the explorer page (state.js lists the
// parts).

const Lens = (() => {
const { $, BOS, N, config, label, state } = State;
const { el, fmt, hide, inkOn, restyle, viridis, write } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="lens" aria-labelledby="lens-title">
  <h2 id="lens-title">Each layer's guess (the logit lens)</h2>
  <p class="muted">Every sublayer adds its output to one running vector per position, the residual stream, and the model
  reads its prediction off the last one (<span id="lens-read">final norm, then lm_head</span>). Reading the stream the same way after the embeddings
  and after every sublayer shows how the guess forms. Only the last row is the model's prediction: earlier streams were
  never trained to be read this way, so they say what the stream already leans to, not what a layer "thinks". Each cell:
  the likeliest next token and its probability, and below it the actual next token and its probability, which is the
  cell's colour (yellow is high).</p>
  <div class="scroll" tabindex="0" role="region" aria-label="the logit lens, scrolls sideways"><table id="lens-table" class="lens"></table></div>
</section>`;

const lens = { heads: [], rows: [] };
const STAGES = ["after the embeddings", ...Array.from({ length: config.n_layer }, (_, l) => [`after layer ${l}'s attention`, `after layer ${l}'s MLP`]).flat()];

function buildLens() {
  write($("lens-read"), config.final_norm ? "final norm, then lm_head" : "lm_head alone: this recipe has no final norm");
  const table = $("lens-table");
  const header = el("tr", {}, el("th", { scope: "col" }, "read → next"));
  for (let t = 0; t < N; t++) {
    const th = el("th", { scope: "col" });
    lens.heads.push(th);
    header.append(th);
  }
  const body = el("tbody");
  for (const stage of STAGES) {
    const cells = Array.from({ length: N }, () => el("td"));
    lens.rows.push(cells);
    body.append(el("tr", {}, el("th", { scope: "row" }, stage), ...cells));
  }
  table.append(el("thead", {}, header), body);
}

// every stage's probabilities at every position: [stage][position][token]
function lensOf(view) {
  const streams = (s) => [s.layers[0].residual, ...s.layers.flatMap((layer) => [layer.afterAttention, layer.afterMLP])];
  const byPosition = view.steps.map((s) => streams(s).map((x) => MiniGPTModel.softmax(Array.from(MiniGPTModel.readOff(state.model, x)))));
  return STAGES.map((_, stage) => byPosition.map((stages) => stages[stage]));
}

function drawLens() {
  const view = state.view, T = view.tokens.length, probs = lensOf(view);
  const next = (t) => (t + 1 < T ? view.tokens[t + 1] : BOS);
  lens.heads.forEach((th, t) => {
    hide(th, t >= T);
    if (t < T) write(th, `${label(view.tokens[t])} → ${label(next(t))}`);
  });
  lens.rows.forEach((cells, stage) => cells.forEach((td, t) => {
    hide(td, t >= T);
    if (t >= T) return;
    const p = probs[stage][t], best = MiniGPTModel.argmax(p), actual = p[next(t)];
    // the colour's number is written too (a title reaches neither a keyboard nor a finger): the actual next's %
    write(td, `${label(best)} ${Math.round(100 * p[best])}%\n${label(next(t))} ${Math.round(100 * actual)}%`);
    restyle(td, "background", viridis(actual));
    restyle(td, "color", inkOn(actual));
    td.title = `${STAGES[stage]}: likeliest ${label(best)} ${fmt(p[best], 3)}; the actual next, ${label(next(t))}, ${fmt(actual, 3)}`;
  }));
}

return { buildLens, drawLens, lensOf, section };
})();
