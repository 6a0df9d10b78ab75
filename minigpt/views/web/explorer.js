// explorer.js: the page around model.js. It reads what the learner types, runs the model on
// it at every keystroke, and draws what the model did: every head's attention, one head
// large, the arithmetic of one row, the predictions, and what each head tends to do.
// Everything it needs is in this file, in model.js and in the JSON the page carries.
"use strict";

(() => {
  const DATA = JSON.parse(document.getElementById("minigpt-data").textContent);
  const model = MiniGPTModel.load(DATA);
  const config = DATA.config.model;
  const vocab = DATA.vocab; // characters in id order; the boundary token is id vocab.length
  const BOS = vocab.length;
  const ids = new Map(vocab.map((ch, i) => [ch, i]));
  const trainingNames = DATA.membership.kind === "exact" ? new Set(DATA.membership.names) : null;
  const bloomBits = DATA.membership.kind === "bloom" ? Uint8Array.from(atob(DATA.membership.bits), (c) => c.charCodeAt(0)) : null;

  const state = { layer: 0, head: 0, pinned: null, view: null };
  const $ = (id) => document.getElementById(id);

  // ---- reading the text ----------------------------------------------------------------

  // What the model reads for `text`: the boundary token, then each known character, at most
  // block_size positions in all. Unknown characters are skipped and longer text is cut.
  function readText(text) {
    const chars = [], kept = [], skipped = new Set();
    let cut = 0;
    for (const ch of text) {
      const known = ids.has(ch), fits = known && kept.length < config.block_size - 1;
      if (!known) skipped.add(ch);
      if (fits) kept.push(ch);
      else if (known) cut += 1;
      chars.push({ ch, known, cut: known && !fits });
    }
    return { chars, kept, skipped: [...skipped], cut, tokens: [BOS, ...kept.map((ch) => ids.get(ch))] };
  }

  const label = (token) => (token === BOS ? "·" : vocab[token]); // the boundary token: data.py's BOUNDARY

  function analyse(text) {
    const read = readText(text);
    return { ...read, text, steps: MiniGPTModel.forward(model, read.tokens) };
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

  // ---- colour: viridis, dark purple for 0 to yellow for 1 ------------------------------------

  const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"]
    .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));

  function viridis(w) {
    const x = Math.min(Math.max(w, 0), 1) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
    const rgb = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
    return `rgb(${rgb.join(",")})`;
  }

  const inkOn = (w) => (w > 0.6 ? "#111" : "#fff");
  const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : x > 0 ? "∞" : "−∞");
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "style") Object.assign(node.style, v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    node.append(...children.filter((c) => c !== null && c !== undefined));
    return node;
  };

  // ---- the text box ----------------------------------------------------------------------

  function renderInput(view) {
    const strip = $("read");
    const shown = view.chars.slice(0, 4 * config.block_size); // a pasted paragraph is not drawn whole
    strip.replaceChildren(el("span", { class: "token bos", title: "the boundary token: every name starts after it" }, "·"),
      ...shown.map((c) => el("span", {
        class: `token ${c.known ? (c.cut ? "cut" : "") : "unknown"}`,
        title: c.known ? (c.cut ? "cut: past the block size" : "read by the model") : "not in the vocabulary: skipped",
      }, c.ch === " " ? "␣" : c.ch)),
      ...(view.chars.length > shown.length ? [el("span", { class: "muted" }, ` … and ${view.chars.length - shown.length} more`)] : []));
    const notes = [];
    if (view.skipped.length) {
      notes.push(`Skipped ${view.skipped.map((c) => `“${c}”`).join(", ")}: not in the model's vocabulary (${vocab.join("")}).`);
      const lower = view.text.toLowerCase(); // as data.py's Tokenizer.check suggests
      if (lower !== view.text && [...lower].every((ch) => ids.has(ch))) notes.push(`The vocabulary is lowercase: try “${lower}”.`);
    }
    if (view.cut) {
      notes.push(`Cut ${view.cut} character${view.cut > 1 ? "s" : ""}: the model reads at most ${config.block_size - 1} after the boundary token.`);
    }
    $("notes").textContent = notes.join(" ");
  }

  // ---- every head at once -------------------------------------------------------------------

  function renderGrid(view, attention) {
    const T = view.tokens.length, cell = Math.max(5, Math.floor(84 / T)), size = cell * T;
    const grid = $("grid");
    grid.replaceChildren();
    grid.style.gridTemplateColumns = `auto repeat(${config.n_head}, auto)`;
    grid.append(el("div"), ...Array.from({ length: config.n_head }, (_, h) => el("div", { class: "axis" }, `head ${h}`)));
    attention.forEach((heads, l) => {
      grid.append(el("div", { class: "axis" }, `layer ${l}`));
      heads.forEach((rows, h) => {
        const canvas = el("canvas", { width: size, height: size, class: "small", "data-layer": l, "data-head": h,
          title: `layer ${l}, head ${h}: click to see it large` });
        const ctx = canvas.getContext("2d");
        rows.forEach((row, i) => row.forEach((w, j) => {
          ctx.fillStyle = j > i ? "#f1f1f4" : viridis(w);
          ctx.fillRect(j * cell, i * cell, cell, cell);
        }));
        const selected = l === state.layer && h === state.head;
        grid.append(el("button", { class: `thumb${selected ? " selected" : ""}`, onclick: () => select(l, h) }, canvas));
      });
    });
  }

  // ---- one head, large ------------------------------------------------------------------------

  function renderMatrix(view, attention) {
    const { layer: l, head: h } = state;
    const rows = attention[l][h];
    const labels = view.tokens.map(label);
    $("matrix-title").textContent = `Layer ${l}, head ${h}`;
    const table = el("table", { class: "matrix", id: "big-matrix" });
    table.append(el("tr", {}, el("th", { class: "corner" }, "reads ↓ attends to →"),
      ...labels.map((t) => el("th", { class: "col" }, t))));
    rows.forEach((row, i) => {
      const tr = el("tr", { class: i === queryPosition(view) ? "pinned" : "", onclick: () => pin(i) });
      tr.append(el("th", { class: "row", title: "click to pin this position" }, labels[i]));
      row.forEach((w, j) => {
        if (j > i) return tr.append(el("td", { class: "future" }));
        const score = view.steps[i].layers[l].scores[h][j];
        tr.append(el("td", {
          style: { background: viridis(w), color: inkOn(w) },
          "data-tip": `position ${i} “${labels[i]}” → position ${j} “${labels[j]}”\nweight ${fmt(w, 4)}\nraw score q·k/√d ${fmt(score, 4)}`,
        }, w.toFixed(2)));
      });
      table.append(tr);
    });
    $("matrix").replaceChildren(table);
  }

  // the pinned position, or the last one the model read
  function queryPosition(view) {
    return state.pinned !== null && state.pinned < view.tokens.length ? state.pinned : view.tokens.length - 1;
  }

  // ---- the arithmetic of one row ------------------------------------------------------------------

  function renderMath(view) {
    const { layer: l, head: h } = state;
    const i = queryPosition(view);
    const labels = view.tokens.map(label);
    const d = config.n_embd / config.n_head, start = h * d;
    const at = view.steps[i].layers[l];
    const slice = (v) => Array.from(v.slice(start, start + d));
    const q = slice(at.q);
    const scores = at.scores[h], weights = at.weights[h];
    const max = Math.max(...scores);
    const exps = scores.map((s) => Math.exp(s - max));
    const total = exps.reduce((a, b) => a + b, 0);
    const vector = (v) => el("code", { class: "vector" }, `[${v.map((x) => fmt(x, 2)).join(", ")}]`);

    $("math-title").textContent = `Position ${i} (“${labels[i]}”), layer ${l}, head ${h}`;
    const table = el("table", { class: "math", id: "math-table" });
    table.append(el("tr", {}, ...["j", "token", "q·kⱼ", "÷ √d", "mask", "e^(s − max)", "weight", ""].map((t) => el("th", {}, t))));
    view.tokens.forEach((_, j) => {
      if (j > i) {
        table.append(el("tr", { class: "future" }, el("td", {}, j), el("td", {}, labels[j]), el("td", {}, "—"),
          el("td", {}, "—"), el("td", {}, "−∞ (future)"), el("td", {}, "0"), el("td", {}, "0"), el("td")));
        return;
      }
      const k = slice(view.steps[j].layers[l].k);
      table.append(el("tr", {}, el("td", {}, j), el("td", {}, labels[j]),
        el("td", { title: `k${j} = [${k.map((x) => fmt(x, 3)).join(", ")}]` }, fmt(scores[j] * Math.sqrt(d))),
        el("td", {}, fmt(scores[j])), el("td", {}, "+0"), el("td", {}, fmt(exps[j])), el("td", {}, fmt(weights[j])),
        el("td", {}, el("span", { class: "bar", style: { width: `${Math.round(weights[j] * 80)}px` } }))));
    });
    table.append(el("tr", { class: "total" }, el("td", { colspan: 5 }, "sum"), el("td", {}, fmt(total)),
      el("td", {}, fmt(weights.reduce((a, b) => a + b, 0))), el("td")));
    const out = slice(at.out);
    $("math").replaceChildren(
      el("p", {}, "The query of this position: ", el("b", {}, "q = "), vector(q)),
      el("ol", {},
        el("li", {}, "q·kⱼ: the query's dot product with the key of every position (hover a number to see kⱼ)."),
        el("li", {}, `÷ √d: divided by √${d} = ${fmt(Math.sqrt(d))}, the square root of the head size, so scores stay moderate.`),
        el("li", {}, `Mask: positions after ${i} get −∞ (the future); the others +0.`),
        el("li", {}, "Softmax: e^(s − max) over their sum, so the weights add up to 1."),
        el("li", {}, "Weights × V: the head's output is the weighted sum Σⱼ weightⱼ · vⱼ of the value vectors.")),
      table,
      el("p", {}, "Weights × V = ", vector(out)),
      el("details", {}, el("summary", {}, "the value vectors vⱼ"),
        ...view.tokens.slice(0, i + 1).map((_, j) => el("div", {}, `v${j} (“${labels[j]}”) = `,
          vector(slice(view.steps[j].layers[l].v))))),
    );
  }

  // ---- predictions ----------------------------------------------------------------------------

  function renderPredictions(view) {
    const rows = [];
    let nats = 0;
    view.steps.forEach((s, i) => {
      const probs = MiniGPTModel.softmax(Array.from(s.logits));
      const actual = i + 1 < view.tokens.length ? view.tokens[i + 1] : BOS; // the next character, or the end
      nats -= Math.log(probs[actual]);
      const best = probs.map((p, t) => [p, t]).sort((a, b) => b[0] - a[0]).slice(0, 5);
      const read = view.kept.slice(0, i).join("");
      rows.push(el("div", { class: "prediction" },
        el("span", { class: "after" }, `after “·${read}”`),
        el("span", { class: "bars" }, ...best.map(([p, t]) => el("span", {
          class: `choice${t === actual ? " actual" : ""}`, title: `${label(t)}: ${fmt(p, 4)}`,
        }, el("span", { class: "char" }, label(t)), el("span", { class: "bar", style: { width: `${Math.max(1, Math.round(p * 90))}px` } }),
        el("span", { class: "p" }, fmt(p, 2))))),
        el("span", { class: "next" }, `next is ${label(actual)}: p = ${fmt(probs[actual], 3)}, −log p = ${fmt(-Math.log(probs[actual]), 2)}`)));
    });
    const T = view.steps.length;
    $("loss").textContent = `Loss of “${view.kept.join("")}”: ${fmt(nats / T, 3)} nats per character ` +
      `(${T} prediction${T > 1 ? "s" : ""}, the end included). A uniform guess: log(${vocab.length + 1}) = ${fmt(Math.log(vocab.length + 1), 3)}.`;
    $("predictions").replaceChildren(...rows);
  }

  // ---- what each head tends to do -------------------------------------------------------------

  const RULES = { previous: 0.5, boundary: 0.5, spread: 0.8, self: 0.5 };

  // Over the rows of many names (positions 1 and on): the mean entropy, the mean entropy as a share
  // of the most a row of that length can have, and the mean weight on the boundary token, on the
  // previous character (positions 2 and on) and on the position itself.
  function headStats(names) {
    const sums = {}, counts = {};
    const add = (l, h, key, value) => {
      const k = `${l},${h},${key}`;
      sums[k] = (sums[k] || 0) + value;
      counts[k] = (counts[k] || 0) + 1;
    };
    for (const name of names) {
      attentionOf(analyse(name)).forEach((heads, l) => heads.forEach((rows, h) => rows.forEach((row, i) => {
        if (i === 0) return; // the boundary token can only attend to itself
        const entropy = -row.slice(0, i + 1).reduce((a, w) => a + (w > 0 ? w * Math.log(w) : 0), 0);
        add(l, h, "entropy", entropy);
        add(l, h, "spread", entropy / Math.log(i + 1));
        add(l, h, "boundary", row[0]);
        add(l, h, "self", row[i]);
        if (i >= 2) add(l, h, "previous", row[i - 1]);
      })));
    }
    const mean = (l, h, key) => (counts[`${l},${h},${key}`] ? sums[`${l},${h},${key}`] / counts[`${l},${h},${key}`] : NaN);
    return Array.from({ length: config.n_layer }, (_, l) => Array.from({ length: config.n_head }, (_, h) =>
      Object.fromEntries(["entropy", "spread", "boundary", "previous", "self"].map((key) => [key, mean(l, h, key)]))));
  }

  function headLabel(s) {
    if (s.previous >= RULES.previous) return "previous character";
    if (s.boundary >= RULES.boundary) return "boundary token";
    if (s.spread >= RULES.spread) return "spread out";
    if (s.self >= RULES.self) return "itself";
    const leaning = [["the previous character", s.previous], ["the boundary token", s.boundary], ["itself", s.self]]
      .filter(([, share]) => !Number.isNaN(share)).sort((a, b) => b[1] - a[1]);
    return leaning.length ? `mixed, most on ${leaning[0][0]}` : "";
  }

  // the names the labels are computed over: training names when the page carries them, else the model's own
  function labelNames() {
    if (trainingNames && trainingNames.size) {
      const all = DATA.membership.names, stride = Math.max(1, Math.floor(all.length / 50));
      return { names: all.filter((_, i) => i % stride === 0).slice(0, 50), what: "training names" };
    }
    return { names: Array.from({ length: 50 }, (_, k) => sample({ seed: 1000 + k })), what: "names the model generated" };
  }

  function renderHeads() {
    const { stats } = state;
    const table = el("table", { class: "heads", id: "heads-table" });
    table.append(el("tr", {}, ...["layer", "head", "mean entropy (nats)", "on the boundary", "on the previous char", "on itself", "label"]
      .map((t) => el("th", {}, t))));
    stats.forEach((heads, l) => heads.forEach((s, h) => {
      const share = (x) => (Number.isNaN(x) ? "—" : `${Math.round(100 * x)}%`);
      table.append(el("tr", { class: l === state.layer && h === state.head ? "selected" : "", onclick: () => select(l, h) },
        el("td", {}, l), el("td", {}, h), el("td", {}, Number.isNaN(s.entropy) ? "—" : fmt(s.entropy, 2)), el("td", {}, share(s.boundary)),
        el("td", {}, share(s.previous)), el("td", {}, share(s.self)), el("td", { class: "label" }, headLabel(s))));
    }));
    $("heads").replaceChildren(table);
  }

  // ---- generating -------------------------------------------------------------------------------

  function options() {
    const number = (id, fallback) => (Number.isFinite(parseFloat($(id).value)) ? parseFloat($(id).value) : fallback);
    return {
      temperature: Math.max(0.05, number("temperature", 1)),
      topK: Math.max(0, Math.round(number("top-k", 0))),
      topP: Math.min(1, Math.max(0.01, number("top-p", 1))),
      seed: Math.round(number("seed", 1)),
    };
  }

  // the seed moves on after each draw, so the next click draws something new, and typing a seed
  // back in repeats the draws that followed it
  function nextSeed() {
    const { seed } = options();
    $("seed").value = seed + 1;
    return seed;
  }

  // The checkpoint's check, as membership.py makes it: the names themselves, or a Bloom filter whose
  // bits (h1 + i * h2) mod size, for i < hashes, are all set for every training name; h1 and h2 are
  // the halves of the name's 64-bit FNV-1a fingerprint over its token ids.
  function inTrainingData(name) {
    if (trainingNames) return trainingNames.has(name);
    if (!bloomBits) return null;
    const chars = [...name];
    if (!chars.every((ch) => ids.has(ch))) return false; // a character no training name has
    const mask = (1n << 64n) - 1n;
    let h = 0xcbf29ce484222325n;
    for (const ch of chars) h = ((h ^ BigInt(ids.get(ch))) * 0x100000001b3n) & mask;
    const low = Number(h & 0xffffffffn), high = Number(((h >> 32n) & 0xffffffffn) | 1n), size = bloomBits.length * 8;
    for (let i = 0; i < DATA.membership.hashes; i++) {
      const bit = (low + i * high) % size;
      if (!((bloomBits[bit >> 3] >> (bit & 7)) & 1)) return false;
    }
    return true;
  }

  function addGenerated(name) {
    const known = inTrainingData(name);
    const mark = known === null ? "" : known ? "in the training data" : "new";
    $("generated").prepend(el("li", { class: known ? "known" : "new", onclick: () => setText(name), title: "click to read it" },
      el("span", { class: "name" }, name || "(empty)"), el("span", { class: "mark" }, mark)));
  }

  function sample({ temperature = 1, topK = 0, topP = 1, seed = 1, prefix = "" } = {}) {
    const read = readText(prefix);
    const random = MiniGPTModel.seededRandom(seed);
    const tokens = MiniGPTModel.sampleName(model, { temperature, topK, topP, random, prefix: read.tokens.slice(1) });
    return read.kept.join("") + tokens.map((t) => vocab[t]).join("");
  }

  function nextCharacter() {
    const view = state.view, { temperature, topK, topP } = options();
    if (view.tokens.length >= config.block_size) {
      $("gen-note").textContent = `The name is as long as the model reads (${config.block_size - 1} characters).`;
      return;
    }
    const logits = Array.from(view.steps[view.steps.length - 1].logits);
    const candidates = MiniGPTModel.filterLogits(logits, { temperature, topK, topP, first: view.tokens.length === 1 });
    const token = MiniGPTModel.sampleToken(candidates, MiniGPTModel.seededRandom(nextSeed())());
    if (token === BOS) {
      $("gen-note").textContent = `The model ends the name here.`;
      addGenerated(view.kept.join(""));
      return;
    }
    $("gen-note").textContent = `Drew “${vocab[token]}”.`;
    setText(view.kept.join("") + vocab[token]);
  }

  function wholeName() {
    const name = sample({ ...options(), seed: nextSeed() });
    addGenerated(name);
    $("gen-note").textContent = "";
    setText(name);
  }

  function tenNames() {
    for (let n = 0; n < 10; n++) addGenerated(sample({ ...options(), seed: nextSeed() }));
  }

  // ---- the model card ---------------------------------------------------------------------------------

  function renderCard() {
    const c = DATA.card, m = config;
    const loss = (x) => (x === null || x === undefined ? "—" : x.toFixed(4));
    const facts = [
      ["parameters", `${c.parameters.toLocaleString("en")}: ${m.n_layer} layer${m.n_layer > 1 ? "s" : ""}, ${m.n_head} heads, ${m.n_embd} dims, block ${m.block_size}`],
      ["architecture", `${m.activation}, ${m.final_norm ? "final norm" : "no final norm"}, ${m.norm_scale ? "learned norm gains" : "no norm gains"}`],
      ["training", `step ${c.step.toLocaleString("en")}, validation loss ${loss(c.val_loss)} (best ${loss(c.best_val_loss)})`],
      ["data", c.data],
      ["vocabulary", `${vocab.length + 1} tokens: ${vocab.join("")} and the boundary token ·`],
      ["checkpoint", c.checkpoint],
    ];
    $("card").replaceChildren(el("table", {}, ...facts.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))),
      el("details", {}, el("summary", {}, "the whole recipe"),
        el("pre", {}, Object.entries(DATA.config).map(([section, values]) =>
          `[${section}]\n` + Object.entries(values).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join("\n")).join("\n\n"))));
    renderCurve();
  }

  // the run's loss against step, from metrics.jsonl, as inline SVG
  function renderCurve() {
    const curve = DATA.curve;
    if (!curve) return $("curve").replaceChildren(el("p", { class: "muted" }, "No metrics.jsonl beside the checkpoint, so no loss curve."));
    const W = 360, H = 150, pad = 34, all = [...curve.train, ...curve.val];
    const steps = all.map((p) => p[0]), losses = all.map((p) => p[1]);
    const [x0, x1, y0, y1] = [Math.min(...steps), Math.max(...steps), Math.min(...losses), Math.max(...losses)];
    const x = (s) => pad + ((s - x0) / Math.max(1, x1 - x0)) * (W - pad - 8);
    const y = (v) => 8 + ((y1 - v) / Math.max(1e-9, y1 - y0)) * (H - pad - 8);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("id", "curve-svg");
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      if (text !== undefined) node.textContent = text;
      svg.append(node);
    };
    add("line", { x1: pad, y1: H - pad + 4, x2: W - 8, y2: H - pad + 4, class: "axis-line" });
    add("line", { x1: pad - 4, y1: 8, x2: pad - 4, y2: H - pad, class: "axis-line" });
    add("text", { x: pad - 8, y: 14, "text-anchor": "end" }, y1.toFixed(2));
    add("text", { x: pad - 8, y: H - pad, "text-anchor": "end" }, y0.toFixed(2));
    add("text", { x: pad, y: H - pad + 18 }, x0);
    add("text", { x: W - 8, y: H - pad + 18, "text-anchor": "end" }, `step ${x1}`);
    const line = (points, cls) => add("polyline", { points: points.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: cls });
    line(curve.train, "train");
    if (curve.val.length) line(curve.val, "val");
    add("text", { x: W - 90, y: H - 4, "text-anchor": "end", class: "legend train" }, "— train");
    add("text", { x: W - 8, y: H - 4, "text-anchor": "end", class: "legend val" }, "— validation");
    $("curve").replaceChildren(svg);
  }

  // ---- wiring ---------------------------------------------------------------------------------------

  function render() {
    const view = (state.view = analyse($("name-input").value));
    const attention = attentionOf(view);
    renderInput(view);
    renderGrid(view, attention);
    renderMatrix(view, attention);
    renderMath(view);
    renderPredictions(view);
    renderHeads();
  }

  function select(layer, head) {
    Object.assign(state, { layer, head });
    render();
  }

  function pin(position) {
    state.pinned = state.pinned === position ? null : position;
    render();
  }

  function setText(text) {
    $("name-input").value = text;
    render();
  }

  function showTip(event) {
    const tip = $("tip"), text = event.target.dataset && event.target.dataset.tip;
    if (!text) return (tip.hidden = true);
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = `${event.pageX + 14}px`;
    tip.style.top = `${event.pageY + 14}px`;
  }

  $("name-input").addEventListener("input", render);
  $("matrix").addEventListener("mousemove", showTip);
  $("matrix").addEventListener("mouseleave", () => ($("tip").hidden = true));
  $("next-char").addEventListener("click", nextCharacter);
  $("whole-name").addEventListener("click", wholeName);
  $("ten-names").addEventListener("click", tenNames);
  $("temperature").value = DATA.config.sample.temperature;
  $("top-k").value = DATA.config.sample.top_k;
  $("top-p").value = DATA.config.sample.top_p;
  const labelled = labelNames();
  state.stats = headStats(labelled.names);
  $("label-rules").textContent = `Averaged over the rows (positions 1 and on) of ${labelled.names.length} ${labelled.what}. ` +
    `A head is labelled “previous character” when on average at least ${100 * RULES.previous}% of a row's ` +
    `weight falls on the character just before; else “boundary token” when at least ${100 * RULES.boundary}% falls on the boundary token; ` +
    `else “spread out” when its rows' entropy is at least ${100 * RULES.spread}% of the most a row of that length can have (all positions alike); ` +
    `else “itself” when at least ${100 * RULES.self}% stays on the position itself; else “mixed”, with the largest of the three shares named.`;
  $("membership-note").textContent = DATA.membership.note;
  renderCard();
  $("name-input").value = DATA.start_text;
  render();

  // For tests and the curious, from the browser console: minigpt.forward("emma")
  window.minigpt = {
    vocab,
    config: DATA.config,
    // {tokens, logits [T][vocab_size], attention [n_layer][n_head][T][T]} for the boundary token and then `text`
    forward(text) {
      const view = analyse(text);
      return { tokens: view.tokens, logits: view.steps.map((s) => Array.from(s.logits)), attention: attentionOf(view) };
    },
    // the probabilities the next draw after `text` comes from, filtered as sampling.py filters them
    nextDistribution(text, { temperature = 1, topK = 0, topP = 1 } = {}) {
      const view = analyse(text);
      const logits = view.steps[view.steps.length - 1].logits;
      return MiniGPTModel.softmax(MiniGPTModel.filterLogits(logits, { temperature, topK, topP, first: view.tokens.length === 1 }));
    },
    sample,
    sampleNames: (n, opts = {}) => Array.from({ length: n }, (_, k) => sample({ ...opts, seed: (opts.seed || 1) + k })),
    inTrainingData,
    setText,
    select,
    pin,
  };
})();
