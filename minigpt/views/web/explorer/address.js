// address.js: the view in the page's address, after the # (page.html#name=zoltan&layer=1&head=2&row=3), so
// that a view can be linked to and opens as it was left, offline from a file; back and forward move
// through the views. A part of the explorer page (state.js lists the parts). The keys, as
// docs/explorer.md lists them:
//   name    the name in the box            second  the name beside it (two names)
//   layer   the head's layer               head    the head
//   row     the row worked out (the query position; none: the last)
//   show    weights or scores              step    the training step of the snapshot shown
//   off     the parts switched off: 1.2 a head (layer 1, head 2), a1 layer 1's attention, m1 its MLP
//   mode    how a part is off: zero or mean      mask    off: the causal mask taken away
//   lesson  the lesson open (from 1), its text at the top of its part of the page
// and the keys a panel adds (its registry line's `address`). Keys the page does not know, or values out
// of range, are left as the page has them.

const Address = (() => {
const { $, DATA, N, config, showSnapshot, state } = State;
const { hide } = Drawing;

// the keys panels add: {key, write() -> the value, or null for none, read(value)}
const panelKeys = [];
const addKey = (key) => panelKeys.push(key);

function viewAddress() {
  const view = new URLSearchParams();
  view.set("name", state.name);
  view.set("layer", state.layer);
  view.set("head", state.head);
  if (state.row !== null) view.set("row", state.row);
  if (state.show !== "weights") view.set("show", state.show);
  const off = [...state.off.heads.map(([l, h]) => `${l}.${h}`), ...state.off.attention.map((l) => `a${l}`),
               ...state.off.mlp.map((l) => `m${l}`)];
  if (off.length) view.set("off", off.join(","));
  if (state.off.mode !== "zero") view.set("mode", state.off.mode);
  if (state.off.unmasked) view.set("mask", "off");
  if (state.snapshot !== null) view.set("step", DATA.snapshots.steps[state.snapshot]);
  view.set("second", state.second);
  if (state.lesson !== null) view.set("lesson", state.lesson + 1);
  for (const { key, write } of panelKeys) {
    const value = write();
    if (value !== null && value !== undefined) view.set(key, value);
  }
  return `#${view.toString()}`;
}

// After every change of view: a change (a head, a row, a switch) adds an entry to the browser's history,
// so that back undoes it; typing in a box adds one at its first key and rewrites it at the next ones (a
// name typed is one entry, and the view before it, a switch just toggled, keeps its own); a playing
// slider rewrites the current entry.
let typedLast = false;
function writeAddress() {
  const address = viewAddress();
  if (address === location.hash) return;
  const typing = ["name-input", "patch-first", "patch-input"].includes(document.activeElement && document.activeElement.id);
  const rewrite = state.playing || !location.hash || (typing && typedLast);
  typedLast = typing;
  try { // the first view replaces the bare address; in a notebook's frame (about:srcdoc) there may be none to write
    history[rewrite ? "replaceState" : "pushState"](null, "", address);
  } catch (error) { /* the view stays as it is, unlinked */ }
}

// The view an address names, set into the page's state (the caller opens the lesson and redraws). Returns
// null when it names none; else whether the lesson it opens sets its own view.
function readAddress(hash) {
  const view = new URLSearchParams(hash.replace(/^#/, ""));
  if (![...view.keys()].length) return null;
  const whole = (key, below) => {
    const n = Number(view.get(key));
    return view.has(key) && Number.isInteger(n) && n >= 0 && n < below ? n : null;
  };
  if (view.has("name")) state.name = $("name-input").value = view.get("name");
  if (view.has("second")) state.second = $("patch-input").value = view.get("second");
  const layer = whole("layer", config.n_layer), head = whole("head", config.n_head);
  if (layer !== null && head !== null) Object.assign(state, { layer, head });
  Object.assign(state, { row: whole("row", N), col: null, details: false });
  if (["weights", "scores"].includes(view.get("show") || "weights")) state.show = view.get("show") || "weights";
  const off = { heads: [], attention: [], mlp: [] };
  for (const part of (view.get("off") || "").split(",")) {
    const headOff = /^(\d+)\.(\d+)$/.exec(part), layerOff = /^([am])(\d+)$/.exec(part);
    if (headOff && +headOff[1] < config.n_layer && +headOff[2] < config.n_head) off.heads.push([+headOff[1], +headOff[2]]);
    if (layerOff && +layerOff[2] < config.n_layer) off[layerOff[1] === "a" ? "attention" : "mlp"].push(+layerOff[2]);
  }
  Object.assign(state.off, off, { mode: view.get("mode") === "mean" && DATA.ablation ? "mean" : "zero",
                                  unmasked: view.get("mask") === "off" });
  for (const radio of document.querySelectorAll("input[name=show]")) radio.checked = radio.value === state.show;
  for (const radio of document.querySelectorAll("input[name=off-mode]")) radio.checked = radio.value === state.off.mode;
  const step = view.has("step") && DATA.snapshots ? DATA.snapshots.steps.indexOf(Number(view.get("step"))) : -1;
  if (step >= 0) showSnapshot(step);
  for (const { key, read } of panelKeys) if (view.has(key)) read(view.get(key));
  const lesson = whole("lesson", Infinity); // past the course, the lessons part opens the free page
  state.lesson = lesson ? lesson - 1 : null;
  // an address with more than the lesson holds the view itself; `lesson=N` alone opens the lesson's own view
  return { lessonSetsView: [...view.keys()].every((key) => key === "lesson") };
}

// "link to this view": the address, shown selected to copy, and copied too where the browser lets a page
// write the clipboard (a file opened from disk may not be let).
function copyLink() {
  const shown = $("link-text");
  shown.value = location.href;
  hide(shown, false);
  shown.select();
  $("link-note").textContent = "This address opens the page at this view:";
  if (navigator.clipboard) {
    navigator.clipboard.writeText(location.href).then(
      () => { $("link-note").textContent = "Copied. This address opens the page at this view:"; }, () => {});
  }
}

return { addKey, copyLink, readAddress, writeAddress };
})();
