// head_roles.js: what each head tends to do, measured when the page was written. A part of the
// explorer page (state.js lists the parts).

const HeadRoles = (() => {
const { $, BOUNDARY, DATA, V, config, roles, selectHead, state, vocab } = State;
const { el, restyle, viridis, write } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="heads-section" aria-labelledby="heads-title">
  <h2 id="heads-title">What each head tends to do</h2>
  <p class="muted" id="roles-note"></p>
  <div id="heads"></div>
  <div id="char-matrix"></div>
  <p id="label-rules" class="muted"></p>
</section>`;

const headCards = [];
const headParts = [];

// the cards' bars and labels, for the step shown
function drawHeads() {
  const now = roles();
  if (!now.shares) return;
  const most = Math.max(...DATA.roles.shares.flat(2), ...DATA.roles.even, ...now.shares.flat(2));
  headParts.forEach(({ l, h, fills, role, chart }) => {
    const shares = now.shares[l][h];
    fills.forEach((fill, k) => restyle(fill, "height", `${(100 * shares[k]) / most}%`));
    write(role, now.labels[l][h]);
    chart.setAttribute("aria-label", `its weight: ${shares.map((x, k) => `${DATA.roles.offsets[k]} ${Math.round(100 * x)}%`).join(", ")}`);
  });
}

function buildHeads() {
  const roles = DATA.roles;
  if (!roles.shares) {
    $("roles-note").textContent = "No names to measure the heads on were at hand when this page was written.";
    return;
  }
  $("roles-note").textContent = `Where each head's weight goes, averaged over every row (positions 1 and on) of ` +
    `${roles.names}; the ticks mark what a head spreading its weight evenly would give. Pick a head for its ` +
    `character × character picture.`;
  const most = Math.max(...roles.shares.flat(2), ...roles.even);
  roles.shares.forEach((heads, l) => heads.forEach((shares, h) => {
    const fills = shares.map(() => el("span", { class: "fill" }));
    const bars = shares.map((s, k) => el("span", { class: "offset", title: `${roles.offsets[k]} (even: ${Math.round(100 * roles.even[k])}%)` },
      fills[k], el("span", { class: "even", style: { bottom: `${(100 * roles.even[k]) / most}%` } })));
    const chart = el("span", { class: "offsets", role: "img" }, ...bars), role = el("span", { class: "role" });
    const card = el("button", { class: "head-card", "data-layer": l, "data-head": h, onclick: () => selectHead(l, h) },
      el("span", { class: "name" }, `layer ${l}, head ${h}`), chart, role);
    headParts.push({ l, h, fills, role, chart });
    headCards.push(card);
  }));
  drawHeads();
  $("heads").append(el("p", { class: "offset-key", "aria-hidden": "true" }, "bars, left to right: " + roles.offsets.join(" · ")), ...headCards);
  $("label-rules").textContent = roles.rules;
}

// the selected head's mean weight from each character read (rows) to each of them and the boundary
// token (columns), at the step shown; the characters are the ones the names read most (char_ids),
// each weight carried as a byte (explorer_page.py's weights_base64)
const charBytes = new Map(); // base64 -> its bytes, decoded once
function charWeights(l, h) {
  const carried = roles().chars, C = DATA.roles.char_ids.length, size = C * (C + 1);
  if (!charBytes.has(carried)) charBytes.set(carried, MiniGPTModel.base64Bytes(carried));
  const bytes = charBytes.get(carried), at = (l * config.n_head + h) * size;
  return Array.from({ length: C }, (_, c) => Array.from(bytes.subarray(at + c * (C + 1), at + (c + 1) * (C + 1)), (b) => b / 255));
}

// the picture's table, built once (a row per character the names read); a redraw writes colours and titles
const charTable = { cells: [], most: [], title: null, note: null };
function buildCharMatrix() {
  const ids = DATA.roles.char_ids, tokens = [...ids.map((t) => vocab[t]), BOUNDARY];
  const table = el("table", { class: "chars", id: "char-table" });
  table.append(el("tr", {}, el("th", { class: "corner", scope: "col" }, "reads ↓ on →"), ...tokens.map((t) => el("th", { scope: "col" }, t)),
    el("th", { scope: "col", class: "most" }, "most of the row")));
  // each row's largest shares written out: a cell's number in its title reaches neither a keyboard nor a finger
  charTable.most = [];
  charTable.cells = ids.map((_, c) => {
    const cells = tokens.map(() => el("td")), most = el("td", { class: "most" });
    charTable.most.push(most);
    table.append(el("tr", {}, el("th", { scope: "row" }, tokens[c]), ...cells, most));
    return cells;
  });
  charTable.title = el("h3");
  charTable.note = el("p", { class: "muted" });
  $("char-matrix").replaceChildren(charTable.title, charTable.note,
    el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "the character picture, scrolls sideways" }, table));
}

function drawCharMatrix() {
  if (!charTable.title) buildCharMatrix();
  const now = roles(), ids = DATA.roles.char_ids, rows = charWeights(state.layer, state.head);
  const tokens = [...ids.map((t) => vocab[t]), BOUNDARY];
  rows.forEach((row, c) => row.forEach((w, t) => {
    const td = charTable.cells[c][t];
    restyle(td, "background", viridis(w));
    td.title = `reading ${tokens[c]}: ${Math.round(100 * w)}% on ${tokens[t]}`;
  }));
  rows.forEach((row, c) => write(charTable.most[c], row.map((w, t) => [w, t]).sort((a, b) => b[0] - a[0]).slice(0, 2)
    .map(([w, t]) => `${tokens[t]} ${Math.round(100 * w)}%`).join(", ")));
  const step = state.snapshot === null ? "" : ` at step ${DATA.snapshots.steps[state.snapshot].toLocaleString("en")}`;
  const some = ids.length < V - 1 ? ` The ${ids.length} characters the names read most are shown, of ${V - 1}.` : "";
  write(charTable.title, `Layer ${state.layer}, head ${state.head}, by character${step}: where the weight goes`);
  write(charTable.note, `Each row is a character being read; each column, what its weight lands on (${BOUNDARY} the boundary token), ` +
    `averaged over ${now.names || DATA.roles.names}${step}. Bright means most of the row.${some}`);
}

// the selected head's card, marked
function markSelectedCard() {
  headCards.forEach((card) => card.classList.toggle("selected", +card.dataset.layer === state.layer && +card.dataset.head === state.head));
}

return { buildHeads, drawCharMatrix, drawHeads, markSelectedCard, section };
})();
