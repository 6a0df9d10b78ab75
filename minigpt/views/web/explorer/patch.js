// patch.js: two names side by side, and a part copied from one into the other (activation
// patching, as TransformerLens's patching plots do it). A part of the explorer page (state.js lists
// the parts).
//
// The first name is the one typed at the top (A), the second is typed here (B). A copy runs A again
// with one part's output at one position taken from B: the residual stream entering a layer, a
// head's output or an MLP's. What it changes is read at A's last position: how much of the way from
// A's prediction to B's the copy goes, measured as the total variation between the two
// distributions (half the sum of |p − q|): 100% means A now predicts what B does, 0% nothing moved.

const Patch = (() => {
const { $, analyse, changed, config, ids, label, setText, state, switchedOff, vocab } = State;
const { diverging, divergingRGB, el, fmt, readableOn, write } = Drawing;
const { patchGrid, patchedRun, probsOf, restoredBy, totalVariation } = Measures;

// its section of the page (the registry puts it in place)
const section = `<section id="patch" aria-labelledby="patch-title">
  <h2 id="patch-title">Two names side by side: copy a part from one into the other</h2>
  <div class="controls">
    <label>your name <input id="patch-first" type="text" autocomplete="off" spellcheck="false" autocapitalize="none"></label>
    <label>second name <input id="patch-input" type="text" autocomplete="off" spellcheck="false" autocapitalize="none"></label>
  </div>
  <p id="patch-note" class="note" role="status"></p>
  <fieldset class="controls"><legend>the grid copies</legend>
    <label><input type="radio" name="patch-grid" value="residual" checked> the residual stream entering each layer</label>
    <label><input type="radio" name="patch-grid" value="parts"> each head's and each MLP's output</label>
  </fieldset>
  <div class="scroll" role="region" aria-label="the patching grid, scrolls sideways"><table id="patch-grid" class="patch"></table></div>
  <div class="controls">
    <label>copy <select id="patch-part"></select></label>
    <label>at <select id="patch-position"></select></label>
  </div>
  <p id="patch-detail" class="note" role="status"></p>
  <div class="scroll" tabindex="0" role="region" aria-label="where the two names differ, scrolls sideways"><table id="patch-compare" class="costs"></table></div>
</section>`;

const patching = { kind: "residual", layer: 0, head: 0, position: null, grid: "residual" }; // grid: the kind it was picked in
const PATCH_STAGES = config.n_layer + 1; // the residual stream entering each layer, and after the last

function buildPatch() {
  const part = $("patch-part");
  for (let l = 0; l < PATCH_STAGES; l++) {
    part.append(el("option", { value: `residual ${l}` }, l < config.n_layer ? `the residual stream entering layer ${l}` : "the residual stream after the last layer"));
  }
  for (let l = 0; l < config.n_layer; l++) {
    for (let h = 0; h < config.n_head; h++) part.append(el("option", { value: `head ${l} ${h}` }, `layer ${l} head ${h}'s output`));
    part.append(el("option", { value: `mlp ${l}` }, `layer ${l} MLP's output`));
  }
  part.addEventListener("change", () => {
    const [kind, layer, head] = part.value.split(" ");
    Object.assign(patching, { kind, layer: Number(layer), head: Number(head || 0) });
    drawPatch();
  });
  $("patch-position").addEventListener("change", () => { patching.position = Number($("patch-position").value); drawPatch(); });
  // the name at the top of the page, here too: changing it beside the grid keeps the grid in sight (lesson 7's
  // learner typed in the box at the top, thousands of pixels up)
  $("patch-first").addEventListener("input", () => setText($("patch-first").value));
  $("patch-input").addEventListener("input", () => {
    Object.assign(state, { second: $("patch-input").value, secondFollows: false });
    changed("second");
  });
  for (const radio of document.querySelectorAll("input[name=patch-grid]")) {
    radio.addEventListener("change", () => { state.patchGrid = radio.value; changed("second"); });
  }
  // the grid is one Tab stop: the arrow keys move inside it, Enter or a click copies
  $("patch-grid").addEventListener("keydown", (event) => {
    const move = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[event.key];
    const at = document.activeElement;
    if (!move || !at.classList.contains("patch-cell")) return;
    event.preventDefault();
    const cells = [...$("patch-grid").querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll(".patch-cell")]);
    const r = cells.findIndex((row) => row.includes(at)), c = cells[r].indexOf(at);
    const next = cells[Math.max(0, Math.min(cells.length - 1, r + move[0]))][Math.max(0, Math.min(cells[0].length - 1, c + move[1]))];
    cells.flat().forEach((cell) => cell.setAttribute("tabindex", cell === next ? "0" : "-1"));
    next.focus();
  });
}

// the second name the page starts with: the first with its first character changed ("emma", "amma"), so
// that the difference has to travel from the start of the name to its end
function secondName(text) {
  const chars = [...text];
  if (!chars.length) return "";
  const first = chars[0], other = ["a", "e", ...vocab].find((ch) => ids.has(ch) && ch !== first);
  return (other || first) + chars.slice(1).join("");
}


function drawPatch() {
  const a = state.view, off = switchedOff(), b = analyse(state.second, off);
  if ($("patch-first").value !== state.name) $("patch-first").value = state.name;
  const nameA = `“${a.kept.join("")}”`, nameB = `“${b.kept.join("")}”`;
  const common = Math.min(a.tokens.length, b.tokens.length);
  drawPatchCompare(a, b);
  const pA = probsOf(a.steps[a.steps.length - 1]), pB = probsOf(b.steps[b.steps.length - 1]);
  const gap = totalVariation(pA, pB);
  if (b.tokens.length < 2 || gap < 1e-12) {
    write($("patch-note"), b.tokens.length < 2 ? "Type a second name to compare and copy parts between." :
      `${nameA} and ${nameB} predict the same after their last characters: there is nothing to restore. Try another second name.`);
    $("patch-grid").replaceChildren();
    write($("patch-detail"), "");
    return;
  }
  const copied = state.patchGrid === "residual" ? "the residual stream at one position and layer" :
    "one head's or one MLP's output at one position";
  write($("patch-note"), `After their last characters, ${nameA} and ${nameB} predict differently: the total variation ` +
    `between the two distributions is ${fmt(gap, 3)}. Each cell copies ${copied} from ${nameB} into ${nameA}, runs ` +
    `${nameA} on from there, and says what share of that difference the copy closes (100%: ${nameA} now predicts ` +
    `what ${nameB} does). Pick a cell, or any part below, to see the prediction change.`);
  for (const radio of document.querySelectorAll("input[name=patch-grid]")) radio.checked = radio.value === state.patchGrid;
  const rows = patchGrid(a, b, off, state.patchGrid);
  if (patching.grid !== state.patchGrid) { // the grid changed kind: the part below starts on its best cell
    pickBest(rows);
    patching.grid = state.patchGrid;
  }
  const t = patching.position !== null && patching.position < common ? patching.position : common - 1;
  patching.position = t;
  drawPatchGrid(rows, a, b);
  const position = $("patch-position");
  position.replaceChildren(...Array.from({ length: common }, (_, t) =>
    el("option", { value: String(t) }, `position ${t} (‘${label(a.tokens[t])}’ / ‘${label(b.tokens[t])}’)`)));
  position.value = String(t);
  $("patch-part").value = patching.kind === "residual" ? `residual ${patching.layer}` :
    patching.kind === "head" ? `head ${patching.layer} ${patching.head}` : `mlp ${patching.layer}`;
  const patched = patchedRun(a, b, patching, off), pP = probsOf(patched[patched.length - 1]);
  const top = (p) => p.map((x, n) => [x, n]).sort((u, v) => v[0] - u[0]).slice(0, 4).map(([x, n]) => `‘${label(n)}’ ${fmt(x, 3)}`).join(", ");
  const share = restoredBy(patched, pA, pB);
  write($("patch-detail"), `Copying ${$("patch-part").selectedOptions[0].textContent} at position ${t} from ${nameB} into ` +
    `${nameA}: after ${nameA} the model predicts ${top(pP)} (it predicted ${top(pA)}; ${nameB} gives ${top(pB)}). ` +
    `The copy closes ${fmt(100 * share, 1)}% of the difference.`);
}

// where the two names differ, position by position: what each reads and predicts, and how far
// their attention rows moved (the mean over heads of the total variation between the two rows)
function drawPatchCompare(a, b) {
  const T = Math.max(a.tokens.length, b.tokens.length), rows = [];
  const best = (s) => { const p = probsOf(s), n = MiniGPTModel.argmax(p); return `‘${label(n)}’ ${fmt(p[n], 2)}`; };
  for (let t = 0; t < T; t++) {
    const sa = a.steps[t], sb = b.steps[t];
    let moved = "";
    if (sa && sb) {
      let sum = 0;
      sa.layers.forEach((layer, l) => layer.weights.forEach((w, h) => { sum += totalVariation(w, sb.layers[l].weights[h]); }));
      moved = fmt(sum / (config.n_layer * config.n_head), 2);
    }
    rows.push(el("tr", {}, el("th", { scope: "row" }, String(t)), el("td", {}, sa ? label(a.tokens[t]) : ""),
      el("td", {}, sb ? label(b.tokens[t]) : ""), el("td", {}, sa ? best(sa) : ""), el("td", {}, sb ? best(sb) : ""),
      el("td", { class: "num" }, moved)));
  }
  $("patch-compare").replaceChildren(el("caption", {}, "Where the two names differ"), el("thead", {}, el("tr", {},
    ...["position", "first reads", "second reads", "first predicts", "second predicts", "attention moved"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...rows));
}

function drawPatchGrid(rows, a, b) {
  const head = el("tr", {}, el("th", { scope: "col" }, "copied"), ...rows[0].shares.map((_, t) =>
    el("th", { scope: "col" }, `${t}: ${label(a.tokens[t])}/${label(b.tokens[t])}`)));
  const body = rows.map((part) => el("tr", {}, el("th", { scope: "row" }, part.name),
    ...part.shares.map((share, t) => {
      const chosen = patching.kind === part.kind && patching.layer === part.layer &&
        (part.kind !== "head" || patching.head === part.head) && patching.position === t;
      const cell = el("button", { type: "button", class: `patch-cell${chosen ? " chosen" : ""}`, "aria-pressed": String(chosen),
        tabindex: chosen ? "0" : "-1", "aria-label": `copy ${part.kind === "residual" ? `the residual stream ${part.name}` : part.name} ` +
          `at position ${t}: ${share === null ? "no difference" : `${Math.round(100 * share)}% closed`}`,
        style: share === null ? {} : { background: diverging(share, 1), color: readableOn(divergingRGB(share, 1)) },
        onclick: () => { Object.assign(patching, { kind: part.kind, layer: part.layer, head: part.head, position: t }); drawPatch(); focusChosenCell(); } },
        share === null ? "–" : `${Math.round(100 * share)}%`);
      return el("td", {}, cell);
    })));
  const caption = state.patchGrid === "residual" ? "Share of the difference each copy of the residual stream closes" :
    "Share of the difference each copy of a head's or an MLP's output closes";
  $("patch-grid").replaceChildren(el("caption", {}, caption), el("thead", {}, head), el("tbody", {}, ...body));
  if (!$("patch-grid").querySelector(".patch-cell[tabindex='0']")) $("patch-grid").querySelector(".patch-cell").setAttribute("tabindex", "0");
}

// the grid's cell that closes the most, as the part copied below it (what a grid of another kind starts on)
function pickBest(rows) {
  let best = null;
  rows.forEach((part) => part.shares.forEach((share, position) => {
    if (share !== null && (best === null || share > best.share)) best = { share, position, part };
  }));
  const { kind, layer, head } = best ? best.part : rows[0];
  Object.assign(patching, { kind, layer, head, position: best ? best.position : null });
}

function focusChosenCell() {
  const chosen = $("patch-grid").querySelector(".patch-cell.chosen");
  if (chosen) chosen.focus();
}

return { buildPatch, drawPatch, secondName, section };
})();
