// The explorer page around model.js: it reads what the learner types, runs the model on it at
// every keystroke, and draws what the model did. Its parts share one closure, in the order the
// page puts them into one script (EXPLORER_PARTS in minigpt/views/explorer_page.py):
//
//   state.js        the page's data, what is selected, and the model run on the text
//   drawing.js      colours, writes that skip what is already there, strips and numbers on canvases
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
//   wiring.js       redraws, events, the start, and the console API
//
// What never changes (the tables, the frames, the head descriptions, the model card) is built
// once, at the model's largest size; a redraw only writes numbers and colours into it and hides
// what the current name does not use. So focus and scroll survive a redraw.

const DATA = JSON.parse(document.getElementById("minigpt-data").textContent);
const finalModel = MiniGPTModel.load(DATA); // the checkpoint's weights, exact
let model = finalModel; // the weights the page runs: the checkpoint's, or a training snapshot's
const config = DATA.config.model;
const vocab = DATA.vocab; // characters in id order; the boundary token is id vocab.length
const BOS = vocab.length, V = vocab.length + 1, N = config.block_size;
// the boundary token's mark: "·", or a stand-in when the vocabulary holds "·" itself (data.py's Tokenizer.boundary)
const BOUNDARY = DATA.boundary;
const D = config.n_embd / config.n_head; // the head size, d
const ids = new Map(vocab.map((ch, i) => [ch, i]));
const trainingNames = DATA.membership.kind === "exact" ? new Set(DATA.membership.names) : null;
const bloomBits = DATA.membership.kind === "bloom" ? MiniGPTModel.base64Bytes(DATA.membership.bits) : null;

// what is selected: a head, a row of it (the query position; null follows the last), a cell
// of that row (the key position), whether the cell's details are open, and what the matrix shows
const state = { layer: 0, head: 0, row: null, col: null, details: false, show: "weights", view: null,
                off: { heads: [], attention: [], mlp: [], mode: "zero", unmasked: false }, // the parts switched off, the mask
                snapshot: null }; // the training snapshot shown (an index), or null for the checkpoint
const $ = (id) => document.getElementById(id);

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

// The model run on `text`. With `reuse` (the page's own redraws), the positions the last such
// run shares with this one (same weights, same parts off, the same tokens up to there) are not
// computed again (model.js's `known`), so typing at the end of a name runs one position.
let lastPass = null;
function analyse(text, off = switchedOff(), reuse = false) {
  const read = readText(text), parts = JSON.stringify(off && [off.heads, off.attention, off.mlp]);
  let shared = 0;
  if (reuse && lastPass && lastPass.model === model && lastPass.parts === parts && lastPass.means === (off && off.means)) {
    while (shared < read.tokens.length && lastPass.tokens[shared] === read.tokens[shared]) shared++;
  }
  const steps = MiniGPTModel.forward(model, read.tokens, off, null, shared ? lastPass.steps.slice(0, shared) : []);
  if (reuse) lastPass = { model, parts, means: off && off.means, tokens: read.tokens, steps };
  return { ...read, text, steps };
}

// what model.js's forward needs to switch the chosen parts off; null when every part is on
function switchedOff(parts = state.off) {
  const count = parts.heads.length + parts.attention.length + parts.mlp.length;
  if (!count && !parts.unmasked) return null;
  return { heads: parts.heads, attention: parts.attention, mlp: parts.mlp, unmasked: Boolean(parts.unmasked),
           means: parts.mode === "mean" && DATA.ablation ? meansNow() : null };
}

// why head h of layer l adds nothing of its own now: null while it is on; "head" when it is
// switched off; "attention" when its layer's whole attention is
const headOff = (l, h) => (!isOn("attention", l) ? "attention" : !isOn("head", l, h) ? "head" : null);

const isOn = (kind, l, h) => (kind === "head" ? !state.off.heads.some(([a, b]) => a === l && b === h) : !state.off[kind].includes(l));

function setPart(kind, l, h, on) {
  const list = kind === "head" ? state.off.heads : state.off[kind];
  const at = kind === "head" ? list.findIndex(([a, b]) => a === l && b === h) : list.indexOf(l);
  if (on && at >= 0) list.splice(at, 1);
  if (!on && at < 0) list.push(kind === "head" ? [l, h] : l);
  render();
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
