// generate.js: generating names with the sliders' settings. A part of the explorer page
// (state.js lists the parts).

const Generate = (() => {
const { $, BOS, DATA, N, bloomBits, ids, options, readText, setText, state, trainingNames, vocab } = State;
const { el } = Drawing;

// its section of the page (the registry puts it in place)
const section = `<section id="generate" class="two" aria-labelledby="generate-title">
  <div>
    <h2 id="generate-title">Generate</h2>
    <p class="muted">With the temperature, top-k and top-p above.</p>
    <div class="controls">
      <label>seed <input id="seed" type="number" step="1" value="1"></label>
      <button id="next-char">next character</button>
      <button id="whole-name">a whole name</button>
      <button id="ten-names">ten names</button>
    </div>
    <p id="gen-note" class="note" role="status"></p>
    <p id="membership-note" class="muted"></p>
  </div>
  <div><h2>Generated</h2><p class="muted">Newest first; pick one to read it. Each draw uses the seed, then moves it on by one.</p><ul id="generated"></ul></div>
</section>`;

function showFilters() {
  const { temperature, topK, topP } = options();
  $("temperature-value").textContent = temperature.toFixed(2);
  $("top-k-value").textContent = topK === 0 ? "off" : String(topK);
  $("top-p-value").textContent = topP >= 1 ? "off" : topP.toFixed(2);
}

// the seed moves on after each draw, so the next click draws something new, and typing a seed
// back in repeats the draws that followed it
function nextSeed() {
  const seed = Math.round(parseFloat($("seed").value)) || 0;
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
  $("generated").prepend(el("li", { class: known ? "known" : "new" },
    el("button", { class: "name", onclick: () => setText(name), title: "read it" }, name || "(empty)"), el("span", { class: "mark" }, mark)));
}

function sample({ temperature = 1, topK = 0, topP = 1, seed = 1, prefix = "" } = {}) {
  const read = readText(prefix);
  const random = MiniGPTModel.seededRandom(seed);
  const tokens = MiniGPTModel.sampleName(state.model, { temperature, topK, topP, random, prefix: read.tokens.slice(1) });
  return read.kept.join("") + tokens.map((t) => vocab[t]).join("");
}

// `note`: where the button that asked says what happened, beside it (lesson 4's button is far from this part's)
function nextCharacter(note = "gen-note") {
  const view = state.view;
  if (view.tokens.length >= N) {
    $(note).textContent = `The name is as long as the model reads (${N - 1} characters).`;
    return;
  }
  const logits = view.steps[view.steps.length - 1].logits;
  const candidates = MiniGPTModel.filterLogits(logits, { ...options(), first: view.tokens.length === 1, bos: BOS });
  const token = MiniGPTModel.sampleToken(candidates, MiniGPTModel.seededRandom(nextSeed())());
  if (token === BOS) {
    addGenerated(view.kept.join(""));
    // drawn again and again where the end is nearly certain: the likeliest character that does not end it is
    // offered, so that a lesson that follows the name one character further can go on
    const box = $(note), other = MiniGPTModel.argmax(Array.from(logits).map((x, t) => (t === BOS ? -Infinity : x)));
    const add = el("button", { type: "button" }, `add “${vocab[other]}”, its likeliest character`);
    add.addEventListener("click", () => {
      box.textContent = `Added “${vocab[other]}”, not drawn.`;
      setText(view.kept.join("") + vocab[other]);
    });
    box.replaceChildren("The model ends the name here: it drew the end, not a character. ", add);
    return;
  }
  $(note).textContent = `Drew “${vocab[token]}”.`;
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

return { inTrainingData, nextCharacter, sample, section, showFilters, tenNames, wholeName };
})();
