// The explorer page around model.js: it reads what the learner types, runs the model on it at
// every keystroke, and draws what the model did. Each part is a file and a namespace of its own
// (`const Cache = (() => { ... return { buildCache, drawCache, readByCache }; })();`), which names
// what it reads of State, Drawing and Measures at its top and offers what it returns at its end.
// A part never calls another: it writes the state and says what changed, and wiring.js, the registry,
// redraws every panel that shows it. The page puts them into one script, state.js, drawing.js and
// measures.js first and wiring.js last (explorer_parts in minigpt/views/explorer_page.py):
//
//   state.js        the page's data, its one state, what changed, and the model run on the text
//   drawing.js      colours, writes that skip what is already there, strips and numbers on canvases,
//                   the switches that turn a part off and on
//   measures.js     what the panels compute beyond the model's run: a name's loss with parts off,
//                   the run with every part on, a part patched from one name into another
//   heads.js        the text box and every head at once
//   matrix.js       one head, large
//   worked_row.js   one row worked out from q, k and v, and where q, k and v come from
//   walk.js         one position through the whole model, and what switching parts off changed
//   predictions.js  the next character, under the sampling filters
//   cache.js        one character at a time: the key/value cache, and its check against the whole pass
//   why.js          why this character: what each part writes toward it
//   units.js        what an MLP unit responds to, and what it writes
//   patch.js        two names side by side, and a part copied from one into the other
//   lens.js         each layer's guess (the logit lens)
//   ablation.js     switching parts off, and what each costs
//   head_roles.js   what each head tends to do
//   generate.js     generating names
//   card.js         the model card and its loss curve
//   snapshots.js    watching attention form over training
//   lessons.js      a course through the page: each lesson a view, what to look at, a question answered
//   address.js      the view in the page's address, to link to and to go back through
//   wiring.js       the registry of panels, what redraws on each change, the events, the start
//
// What never changes (the tables, the frames, the head descriptions, the model card) is built
// once, at the model's largest size; a redraw only writes numbers and colours into it and hides
// what the current name does not use. So focus and scroll survive a redraw.

const State = (() => {
const DATA = JSON.parse(document.getElementById("minigpt-data").textContent);
const finalModel = MiniGPTModel.load(DATA); // the checkpoint's weights, exact
// The page checks itself against torch as it opens: page_data.py wrote the logits torch computed for a name, and
// model.js computes them again (MiniGPTModel.disagreement); where they differ wiring.js says so and draws nothing.
const disagreement = DATA.torch_check ? MiniGPTModel.disagreement(finalModel, DATA.torch_check) : null;
const config = DATA.config.model;
const vocab = DATA.vocab; // characters in id order; the boundary token is id vocab.length
const BOS = vocab.length, V = vocab.length + 1, N = config.block_size;
// the boundary token's mark: "·", or a stand-in when the vocabulary holds "·" itself (common/text.py)
const BOUNDARY = DATA.boundary;
const D = config.n_embd / config.n_head; // the head size, d
const ids = new Map(vocab.map((ch, i) => [ch, i]));
const trainingNames = DATA.membership.kind === "exact" ? new Set(DATA.membership.names) : null;
const bloomBits = DATA.membership.kind === "bloom" ? MiniGPTModel.base64Bytes(DATA.membership.bits) : null;

// The page's one state, which every control, the lessons and the address write: the name and the second
// name beside it (which follows the name, "emma" and "amma", until one is typed), what the patching grid
// copies ("residual": the stream entering each layer; "parts": each head's and MLP's output), a head, a row of it (the query position; null follows the last), a cell of that row
// (the key position), whether the cell's details are open, the key position the pointer is on (`hover`),
// what the matrix shows, the parts switched off and the mask, the sampling filters, the character the why
// panel explains against a rival and the part whose writing it reads out (each null: the likeliest), the
// training snapshot shown (an index; null: the checkpoint), the
// weights the page runs for it and whether the slider plays, the lesson open (0-based; null: the free
// page), and the model's run on the name (`view`).
const state = { name: "", second: "", secondFollows: true, patchGrid: "residual",
                layer: 0, head: 0, row: null, col: null, details: false, hover: null,
                show: "weights", view: null, off: { heads: [], attention: [], mlp: [], mode: "zero", unmasked: false },
                filters: { temperature: 1, topK: 0, topP: 1 }, why: { target: null, rival: null, part: null },
                snapshot: null, model: finalModel, playing: false, lesson: null };
const $ = (id) => document.getElementById(id);

// ---- what changed ----------------------------------------------------------------------
// A control writes the state and says what it changed; wiring.js, which knows every panel, redraws
// what shows it, so a part never calls the panels themselves. The changes, one vocabulary for the
// controls and the panels: "text" (the parts switched off, the mask or a lesson's view: the model runs
// again), "name" (a new name: the row follows its end again, and the model runs again), "second" (the
// second name), "head", "cell" (the row and its cell), "hover" (the key position pointed at), "show"
// (weights or scores), "filters" (the sampling sliders), "why" (the character explained), "snapshot"
// (the weights the page runs), "lesson" (the lesson opened; with the id of the section it scrolls to,
// drawn now) and "resized" (a panel's drawing changed size; its id comes along).
const listeners = [];
const onChange = (listen) => listeners.push(listen);
const changed = (what, detail) => listeners.forEach((listen) => listen(what, detail));

const selectHead = (layer, head) => { Object.assign(state, { layer, head }); changed("head"); };
function selectCell(row, col) { // the last row is stored as null, so that it follows the name's end
  Object.assign(state, { row: row === state.view.tokens.length - 1 ? null : row, col });
  changed("cell");
}
// the name, written into the state and shown in its box (the boxes' own typing writes the state too)
function setText(text) {
  state.name = $("name-input").value = text;
  changed("name");
}
const setHover = (j) => { if (state.hover !== j) { state.hover = j; changed("hover"); } };
const explain = (choice) => { Object.assign(state.why, choice); changed("why"); }; // {target, rival, part}

// the training snapshot shown (its index in DATA.snapshots.steps): its weights, decoded once; the
// checkpoint's own step runs the checkpoint's exact weights
const decodedSnapshots = new Map();
function showSnapshot(index) {
  const snaps = DATA.snapshots, step = snaps.steps[index];
  const exact = step === snaps.checkpoint_step && index === snaps.steps.lastIndexOf(step);
  state.snapshot = exact ? null : index;
  if (!exact && !decodedSnapshots.has(index)) decodedSnapshots.set(index, MiniGPTModel.loadSnapshot(config, snaps, index));
  state.model = exact ? finalModel : decodedSnapshots.get(index);
  changed("snapshot");
}
// the index on the slider of the step shown (the checkpoint's: its step's last snapshot, else the last)
function snapshotShown() {
  const steps = DATA.snapshots.steps, last = steps.lastIndexOf(DATA.snapshots.checkpoint_step);
  return state.snapshot !== null ? state.snapshot : last >= 0 ? last : steps.length - 1;
}

// ---- what the run measured, at the step shown -----------------------------------------

const decodedMeans = new Map(); // the carried base64 of mean outputs -> those outputs

// what each part costs on the names the page was written with ({zero, mean}: the whole model's
// loss and each part's cost, in DATA.ablation.parts' order) and each part's mean output (what
// mean mode puts in its place), at the step shown: the checkpoint's, or the snapshot's
function ablationNow() {
  const at = state.snapshot === null || !DATA.snapshots.ablation ? null : DATA.snapshots.ablation[state.snapshot];
  return at || DATA.ablation;
}

// the parts' mean outputs at the step shown, decoded once
function meansNow() {
  const carried = ablationNow().means;
  if (!decodedMeans.has(carried)) decodedMeans.set(carried, meansFrom(carried));
  return decodedMeans.get(carried);
}

// mean outputs carried as one base64 float32 buffer (explorer_page.py's means_base64: heads,
// attention, MLPs, each layer by layer) -> { head: [l][h], attention: [l], mlp: [l] }
function meansFrom(base64) {
  const floats = MiniGPTModel.float32s(base64);
  const L = config.n_layer, H = config.n_head, C = config.n_embd, hd = C / H;
  const slice = (at, n) => floats.subarray(at, at + n);
  const head = Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => slice((l * H + h) * hd, hd)));
  const rows = (at) => Array.from({ length: L }, (_, l) => slice(at + l * C, C));
  return { head, attention: rows(L * C), mlp: rows(2 * L * C) };
}

// what the heads tend to do at the step shown: the checkpoint's, or the snapshot's
const roles = () => (state.snapshot === null ? DATA.roles : { ...DATA.roles, ...DATA.snapshots.roles[state.snapshot] });
const headLabel = (l, h) => (roles().labels ? roles().labels[l][h] : "");

// the sampling filters as the sliders set them (wiring.js writes them into the state), kept in range
function options() {
  const { temperature, topK, topP } = state.filters, number = (x, fallback) => (Number.isFinite(x) ? x : fallback);
  return {
    temperature: Math.max(0.05, number(temperature, 1)),
    topK: Math.max(0, Math.round(number(topK, 0))),
    topP: Math.min(1, Math.max(0.01, number(topP, 1))),
  };
}

// ---- reading the text ----------------------------------------------------------------

// What the model reads for `text`: the boundary token, then each known character, at most
// block_size positions in all. Unknown characters are skipped and longer text is cut.
function readText(text) {
  const chars = [], kept = [], skipped = new Set();
  let cut = 0;
  for (const ch of text) {
    const known = ids.has(ch), fits = known && kept.length < N - 1;
    if (!known) skipped.add(ch);
    if (fits) kept.push(ch);
    else if (known) cut += 1;
    chars.push({ ch, known, cut: known && !fits });
  }
  return { chars, kept, skipped: [...skipped], cut, tokens: [BOS, ...kept.map((ch) => ids.get(ch))] };
}

const label = (token) => (token === BOS ? BOUNDARY : vocab[token]);
const tokenOf = (shown) => (shown === BOUNDARY ? BOS : ids.get(shown)); // label's inverse
const charOf = (t) => (t === BOS ? `${BOUNDARY} (the end)` : `“${label(t)}”`); // a token in a sentence

// The model run on `text`. With `reuse` (the page's own redraws), the positions the last such
// run shares with this one (same weights, same parts off, the same tokens up to there) are not
// computed again (model.js's `known`), so typing at the end of a name runs one position. The mask is
// one of the parts: a pass without it is no pass with it, however many tokens the two share.
let lastPass = null;
function analyse(text, off = switchedOff(), reuse = false) {
  const read = readText(text), parts = JSON.stringify(off && [off.heads, off.attention, off.mlp, off.unmasked]);
  let shared = 0;
  if (reuse && lastPass && lastPass.model === state.model && lastPass.parts === parts && lastPass.means === (off && off.means)) {
    while (shared < read.tokens.length && lastPass.tokens[shared] === read.tokens[shared]) shared++;
  }
  const known = shared ? lastPass.steps.slice(0, shared) : [];
  const steps = MiniGPTModel.forward(state.model, read.tokens, { ...MiniGPTModel.switchedOff(state.model, off), known });
  if (reuse) lastPass = { model: state.model, parts, means: off && off.means, tokens: read.tokens, steps };
  return { ...read, text, steps };
}

// what model.js's forward needs to switch the chosen parts off; null when every part is on
function switchedOff(parts = state.off) {
  const count = parts.heads.length + parts.attention.length + parts.mlp.length;
  if (!count && !parts.unmasked) return null;
  return { heads: parts.heads, attention: parts.attention, mlp: parts.mlp, unmasked: Boolean(parts.unmasked),
           means: parts.mode === "mean" && DATA.ablation ? meansNow() : null };
}

// parts off as the console API names them ({heads: [[l, h]], attention: [l], mlp: [l], mode}, any left out)
// -> what model.js's forward takes; null (or nothing given) for every part on
const partsOff = (off) => (off ? switchedOff({ heads: [], attention: [], mlp: [], mode: "zero", ...off }) : null);

// why head h of layer l adds nothing of its own now: null while it is on; "head" when it is
// switched off; "attention" when its layer's whole attention is
const headOff = (l, h) => (!isOn("attention", l) ? "attention" : !isOn("head", l, h) ? "head" : null);

const isOn = (kind, l, h) => (kind === "head" ? !state.off.heads.some(([a, b]) => a === l && b === h) : !state.off[kind].includes(l));

function setPart(kind, l, h, on) {
  const list = kind === "head" ? state.off.heads : state.off[kind];
  const at = kind === "head" ? list.findIndex(([a, b]) => a === l && b === h) : list.indexOf(l);
  if (on && at >= 0) list.splice(at, 1);
  if (!on && at < 0) list.push(kind === "head" ? [l, h] : l);
  changed("text");
}

// attention[l][h][i][j]: how much position i attends to position j (0 for the future)
function attentionOf(view) {
  const T = view.tokens.length;
  return Array.from({ length: config.n_layer }, (_, l) =>
    Array.from({ length: config.n_head }, (_, h) =>
      view.steps.map((s) => Array.from({ length: T }, (_, j) => (j < s.layers[l].weights[h].length ? s.layers[l].weights[h][j] : 0)))
    )
  );
}

// the selected row: the pinned position, or the last one the model read
const rowOf = (view) => (state.row !== null && state.row < view.tokens.length ? state.row : view.tokens.length - 1);
// the selected cell of that row: the chosen key position, or the one with the most weight
function colOf(view) {
  const i = rowOf(view);
  if (state.col !== null && state.col <= (state.off.unmasked ? view.tokens.length - 1 : i)) return state.col;
  const w = view.steps[i].layers[state.layer].weights[state.head];
  return MiniGPTModel.argmax(w);
}

return {
  $, BOS, BOUNDARY, D, DATA, N, V, ablationNow, analyse, attentionOf, bloomBits, changed, charOf, colOf, config,
  disagreement, explain, finalModel, headLabel, headOff, ids, isOn, label, onChange, options, partsOff, readText, roles, rowOf,
  selectCell, selectHead, setHover, setPart, setText, showSnapshot, snapshotShown, state, switchedOff, tokenOf,
  trainingNames, vocab
};
})();
