// cache.js: one character at a time, over the key/value cache. The name is read as generation reads it:
// a position at a time, each computing only its own q, k and v, its keys and values kept and read again
// by every later position. The table shows the selected head's cache after the whole name, and what the
// newest query reads of it; a line checks the cached keys and values against the whole pass's. A part
// of the explorer page (state.js lists the parts).

const Cache = (() => {
const { $, D, N, config, label, state, switchedOff } = State;
const { el, fmt, hide, write } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="cache" aria-labelledby="cache-title">
  <h2 id="cache-title">One character at a time: the key/value cache</h2>
  <p class="muted intro">Generating, the model computes each new position once: its query, key and value. The keys and
  values of the positions before it are kept, the cache, and the new query reads them all; because a position
  never reads a later one, nothing cached changes when a character is added. Below, the selected head's cache
  after your name, read a position at a time as sampling reads it.</p>
  <div class="scroll"><table id="cache-table" class="numbers"></table></div>
  <p><button id="cache-next" type="button">add the model's next character</button>
    <span id="cache-next-note" class="note" role="status"></span></p>
  <p id="cache-check" class="note" role="status"></p>
</section>`;

const cacheView = { rows: [] };

function buildCache() {
  const table = $("cache-table");
  const head = el("tr", {}, ...["position", "", "k, cached (first numbers)", "v, cached (first numbers)", "the newest query's weight"]
    .map((t) => el("th", { scope: "col" }, t)));
  cacheView.rows = Array.from({ length: N }, () => {
    const cells = Array.from({ length: 5 }, () => el("td"));
    return { tr: el("tr", {}, ...cells), cells };
  });
  table.replaceChildren(el("caption", { id: "cache-caption" }, "The selected head's key/value cache"), el("thead", {}, head),
    el("tbody", {}, ...cacheView.rows.map((r) => r.tr)));
}

// The name read a position at a time (model.js's step over its cache): the cache after each
// position, and each position's own look at it.
function readByCache(tokens) {
  const cache = MiniGPTModel.newCache(config), steps = tokens.map((token) => MiniGPTModel.step(state.model, cache, token));
  return { cache, steps };
}

function drawCache() {
  const view = state.view, T = view.tokens.length, l = state.layer, h = state.head, start = h * D;
  const off = switchedOff();
  if (off) { // the cache is the plain model's way to read; with parts off or the mask off the page runs otherwise
    write($("cache-check"), "Switch every part on (and the mask) to read the name over the cache.");
    cacheView.rows.forEach((r) => hide(r.tr, true));
    return;
  }
  const { cache, steps } = readByCache(view.tokens);
  write($("cache-caption"), `Layer ${l}, head ${h}: its cache after “${view.kept.join("")}”, numbers ${start} to ${start + D - 1} of each k and v`);
  const weights = steps[T - 1].layers[l].weights[h]; // the newest query reads every cached key
  const first = (vector) => Array.from(vector.subarray(start, start + 4), (x) => fmt(x, 2)).join(" ") + " …";
  cacheView.rows.forEach((r, t) => {
    hide(r.tr, t >= T);
    if (t >= T) return;
    write(r.cells[0], String(t));
    write(r.cells[1], label(view.tokens[t]));
    write(r.cells[2], first(cache.keys[l][t]));
    write(r.cells[3], first(cache.values[l][t]));
    write(r.cells[4], fmt(weights[t], 3));
  });
  let largest = 0;
  view.steps.forEach((s, t) => s.layers.forEach((layer, n) => {
    for (let i = 0; i < config.n_embd; i++) {
      largest = Math.max(largest, Math.abs(layer.k[i] - cache.keys[n][t][i]), Math.abs(layer.v[i] - cache.values[n][t][i]));
    }
  }));
  write($("cache-check"), `Read a position at a time, the name fills the cache with ${T} keys and ${T} values in each head of ` +
    `each layer; the newest position's query (“${label(view.tokens[T - 1])}”) reads all ${T} of them, its own among them. ` +
    `The cached keys and values are the whole pass's: the largest difference over every layer is ${largest.toExponential(1)}.`);
}

return { buildCache, drawCache, readByCache, section };
})();
