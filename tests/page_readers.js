// What the browser tests read of the explorer page beyond its console API (window.minigpt): the numbers
// behind what it shows, read from its parts' namespaces. The tests add this script to the page they open
// (tests/browser.py's add_readers, before the page loads): it waits for the page's own scripts, and leaves any
// other page alone. The page itself does not carry it.
addEventListener("DOMContentLoaded", () => {
  if (typeof State === "undefined" || !window.minigpt) return;
  const { analyse, partsOff, readText, state } = State;
  const list = (v) => Array.from(v);
  Object.assign(window.minigpt, {
    // `text` read a position at a time over the key/value cache, as generation reads it: the cached keys and values
    // [layer][position][n_embd] (every head's slice side by side) and the logits of each position
    cache(text) {
      const { tokens } = readText(text), { cache, steps } = Cache.readByCache(tokens);
      return { tokens, keys: cache.keys.map((l) => l.map(list)), values: cache.values.map((l) => l.map(list)),
               logits: steps.map((s) => list(s.logits)) };
    },
    // what the page shows now: its tokens and logits (computed for the text box, reusing what it shares with the last),
    // and the large matrix's numbers [row][column] (the selected head's weights, or its scores with −∞ where masked)
    shown: () => ({ tokens: state.view.tokens, logits: state.view.steps.map((s) => list(s.logits)), matrix: Matrix.matrix.shown }),
    // the probabilities the next draw after `text` comes from, filtered as sampling.py filters them
    nextDistribution(text, { temperature = 1, topK = 0, topP = 1 } = {}) {
      const view = analyse(text);
      const logits = view.steps[view.steps.length - 1].logits;
      return MiniGPTModel.softmax(MiniGPTModel.filterLogits(logits, { temperature, topK, topP, first: view.tokens.length === 1 }));
    },
    // the numbers the worked row was drawn from: q, each k, q⊙k, the scores, weights, values and output
    worked() {
      const n = WorkedRow.math.numbers;
      return { i: n.i, layer: n.layer, head: n.head, q: list(n.q), keys: n.keys.map(list), products: n.products.map(list),
               scores: list(n.scores), weights: list(n.weights), values: n.values.map(list), out: list(n.out) };
    },
    // every operation's vector at position `i` (the last when null) of `text`, by key, as the walk draws them
    walk(text, i = null, off = null) {
      const view = analyse(text, partsOff(off));
      return Walk.walkNumbers(view, i === null ? view.tokens.length - 1 : i);
    },
    // what the walk shows now: its position, each operation's vector, and the first that differs from every part on
    walkShown: () => {
      const shown = Walk.walk.numbers;
      return shown && { i: shown.i, firstDiffer: shown.firstDiffer,
                        numbers: Object.fromEntries(Object.entries(shown.numbers).map(([k, v]) => [k, list(v)])) };
    },
    // every part's term in every logit [position][part][token] and the parts' names, for `text`
    attribution(text, off = null) {
      const o = partsOff(off), view = analyse(text, o);
      const found = view.steps.map((s) => MiniGPTModel.attribution(state.model, s, o));
      return { parts: found[0].parts.map((p) => p.name), scales: found.map((f) => f.scale),
               terms: found.map((f) => f.parts.map((p) => list(p.terms))) };
    },
    // A's logits at every position with B's part at one position copied in ({kind: "residual", "head" or "mlp",
    // layer, head, position}; a residual layer of n_layer is the stream after the last layer)
    patched(textA, textB, part, off = null) {
      const o = partsOff(off);
      return Measures.patchedRun(analyse(textA, o), analyse(textB, o), part, o).map((s) => list(s.logits));
    },
    // the patching grid [part][position] for two names, as the page draws it ("residual": a stage a row;
    // "parts": each head and MLP), its rows' names, and how long it took (ms)
    patchGrid(textA, textB, kind = "residual") {
      const started = performance.now(), rows = Measures.patchGrid(analyse(textA, null), analyse(textB, null), null, kind);
      return { grid: rows.map((row) => row.shares), names: rows.map((row) => row.name), ms: performance.now() - started };
    },
    // what the why panel shows now: the position, the two characters, and the parts' terms as drawn, in order
    whyShown: () => ({ target: Number(document.getElementById("why-target").value), rival: Number(document.getElementById("why-rival").value),
                       toward: Why.why.rows.toward.filter((r) => !r.node.hidden).map((r) => [r.name.textContent, r.value.textContent]) }),
    // each stage's probabilities [stage][position][token] for `text`, as the lens table shows them
    lens: (text) => Lens.lensOf(analyse(text)),
    // the live cost column, drawn now: [part, text]
    liveCosts: () => { Ablation.drawLiveCosts(); return Ablation.costRows.map(({ part, live }) => [part.part, live.textContent]); },
  });
});
