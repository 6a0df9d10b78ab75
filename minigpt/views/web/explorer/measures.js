// measures.js: what the panels compute beyond the model's run on the name, the page's counterpart of
// minigpt/measurements: a name's loss with parts off (ablation), the run with every part on (what
// switching parts off changed), and a part copied from one name's run into another's (patching). Every
// part reads these; none of them draws. A part of the explorer page (state.js lists the parts).

const Measures = (() => {
const { BOS, D, analyse, config, state, switchedOff } = State;

// the loss of the name in the box, per token, with these parts off; `from` reuses the layers
// before from.layer of a pass that differs only after them (model.js's forward)
function nameLoss(off, from = null) {
  const tokens = state.view.tokens;
  return lossOf({ tokens, steps: MiniGPTModel.forward(state.model, tokens, { ...MiniGPTModel.switchedOff(state.model, switchedOff(off)), from }) });
}

// a run's loss on its name, per token: the mean of −log p of each next token, the end last
function lossOf({ tokens, steps }) {
  let nats = 0;
  steps.forEach((s, i) => { nats -= Math.log(probsOf(s)[i + 1 < tokens.length ? tokens[i + 1] : BOS]); });
  return nats / steps.length;
}

// The position's record with every part on, for what changed: run once per text and weights.
let baseline = null;
function baselineOf(view) {
  const key = view.tokens.join(",");
  if (!baseline || baseline.key !== key || baseline.model !== state.model) {
    baseline = { key, model: state.model, steps: analyse(view.text, null).steps };
  }
  return baseline.steps;
}

const totalVariation = (p, q) => p.reduce((sum, x, i) => sum + Math.abs(x - q[i]), 0) / 2;
const probsOf = (step) => MiniGPTModel.softmax(Array.from(step.logits));

// A's steps with B's part at position t in place of A's own (`off`: the parts switched off, in both)
function patchedRun(a, b, { kind, layer: l, head: h, position: t }, off) {
  if (kind === "residual") {
    const entering = (s) => (l < config.n_layer ? s.layers[l].residual : s.last);
    const residual = a.steps.map(entering);
    residual[t] = entering(b.steps[t]);
    // the positions before t are A's own: only t and after are run again, reading their keys and values
    return MiniGPTModel.forward(state.model, a.tokens, { ...MiniGPTModel.switchedOff(state.model, off),
                                                      from: { layer: l, residual }, known: a.steps.slice(0, t) });
  }
  const value = kind === "head" ? b.steps[t].layers[l].out.slice(h * D, (h + 1) * D) : b.steps[t].layers[l].mlpOut;
  const partsOff = MiniGPTModel.switchedOff(state.model, off);
  const edit = MiniGPTModel.patched(state.model, { kind, layer: l, head: h, position: t, value }, partsOff.edit);
  return MiniGPTModel.forward(state.model, a.tokens, { ...partsOff, edit, known: a.steps.slice(0, t) });
}

// the share of the way from A's prediction (at its last position) to B's that a patched run goes
function restoredBy(steps, pA, pB) {
  const gap = totalVariation(pA, pB);
  return gap < 1e-12 ? null : 1 - totalVariation(probsOf(steps[steps.length - 1]), pB) / gap;
}

// The patching grid: each part it copies (`grid` "residual": the stream entering each layer and after the
// last; "parts": each head's and each MLP's output), and at each position the share restored.
function patchParts(grid) {
  if (grid === "residual") {
    return Array.from({ length: config.n_layer + 1 }, (_, l) => ({ kind: "residual", layer: l, head: 0,
      name: l < config.n_layer ? `entering layer ${l}` : "after the last layer" }));
  }
  return Array.from({ length: config.n_layer }, (_, l) => [
    ...Array.from({ length: config.n_head }, (_, h) => ({ kind: "head", layer: l, head: h, name: `layer ${l} head ${h}` })),
    { kind: "mlp", layer: l, head: 0, name: `layer ${l} MLP` }]).flat();
}
function patchGrid(a, b, off, grid = "residual") {
  const pA = probsOf(a.steps[a.steps.length - 1]), pB = probsOf(b.steps[b.steps.length - 1]);
  const common = Math.min(a.tokens.length, b.tokens.length);
  return patchParts(grid).map((part) => ({ ...part, shares: Array.from({ length: common }, (_, t) =>
    restoredBy(patchedRun(a, b, { ...part, position: t }, off), pA, pB)) }));
}

return { baselineOf, lossOf, nameLoss, patchGrid, patchedRun, probsOf, restoredBy, totalVariation };
})();
