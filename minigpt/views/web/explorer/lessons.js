// lessons.js: a course through the page, in the order the attention tutorials take: each lesson sets the
// page to one view of the learner's own model, says what to look at, and asks a question that the page
// answers from this model's numbers. The free page stays as it is; `lesson=N` in the address opens a
// lesson. A part of the explorer page (state.js lists the parts).

const Lessons = (() => {
const { $, D, DATA, analyse, changed, charOf, config, label, rowOf, state, switchedOff } = State;
const { el, fmt, hide, write } = Drawing;
const { nameLoss, patchGrid, probsOf, totalVariation } = Measures;

const pct = (x) => `${fmt(100 * x, 1)}%`;
const lastStep = () => state.view.steps[state.view.steps.length - 1];

const LESSONS = [
  { title: "One head", section: "head", subject: "matrix-box", view: { show: "weights", mask: false },
    text: "Each position asks a question, its query q (“what am I looking for”); every position it may read offers a key k " +
      "(“what do I offer”) and a value v (“what do I pass on”). A score is q·k ÷ √d, d the head size (not the model's " +
      "width); the softmax turns a row of scores into weights that add up to 1, and the head's output is the weights' " +
      "sum of the values. The worked row (beside the matrix, or below it on a narrow screen) does this for one " +
      "position, number by number.",
    look: "Pick a row of the matrix (a cell, or the arrow keys): its weights, and beside them q, each k, q·k, ÷√d and the softmax.",
    question: "Which earlier character does the selected row look at most, and with what weight?",
    answer() {
      const i = rowOf(state.view), w = state.view.steps[i].layers[state.layer].weights[state.head], j = MiniGPTModel.argmax(w);
      const tokens = state.view.tokens, row = `Row ${i} (${charOf(tokens[i])}) of layer ${state.layer}, head ${state.head}`;
      if (j !== i) return `${row} puts ${pct(w[j])} of its weight on position ${j}, ${charOf(tokens[j])}.`;
      // the question asks for an earlier character: a row that looks most at itself is said so, then the earlier one
      if (i === 0) return `${row} has no earlier character to read: all its weight is on its own position.`;
      const k = MiniGPTModel.argmax(Array.from(w).slice(0, i));
      return `${row} puts most of its weight, ${pct(w[i])}, on its own position; of the earlier characters, ` +
        `${pct(w[k])} on position ${k}, ${charOf(tokens[k])}.`;
    } },
  { title: "The causal mask", section: "head", subject: "matrix-box", view: { show: "scores", mask: false },
    text: "A row may read its own position and the ones before it, never the ones after: before the softmax the later " +
      "positions' scores are set to −∞, so their weights are 0. Without the mask a model trained to predict the next " +
      "character would learn to read it. Click a masked cell, then tick “mask off”: this model reads the future, as it " +
      "never learned to, and the whole page follows.",
    look: "The upper triangle of raw scores (−∞), then the same matrix and the predictions with the mask off.",
    question: "With the mask off, does this model's loss on the name fall or rise? And on the validation names?",
    answer() {
      const masked = nameLoss({ ...state.off, unmasked: false }), open = nameLoss({ ...state.off, unmasked: true });
      const over = DATA.mask_off;
      const names = over ? ` Over the ${over.names}: ${fmt(over.masked, 3)} with the mask, ${fmt(over.unmasked, 3)} without ` +
        `it: it ${over.unmasked < over.masked ? "falls" : "rises"}.` : "";
      return `On this name, with the mask, ${fmt(masked, 3)} nats per character; without it, ${fmt(open, 3)}: it ` +
        `${open < masked ? "falls" : "rises"}.${names} ` +
        "A model trained with the mask never learned what to do with the future: shown it, it mostly reads noise. " +
        "A model trained without the mask learns to read the answer: its loss falls far below this one's, and its " +
        "names are garbage, for when it generates there is no answer yet to read. To see both, train one without " +
        "the mask, in seconds (minigpt train --set model.causal=false --steps 300 --out runs/nomask), and put the two " +
        "side by side: minigpt inspect-attention RUN runs/nomask --html mask.html, where RUN is this page's run.";
    } },
  { title: "Many heads", section: "type", subject: "grid", phoneBefore: "grid", view: { mask: false },
    text: "The heads of a layer are slices of one projection: W_Q, W_K and W_V make q, k and v for all heads at once, " +
      `and each head reads its own d = ${D} numbers of them. The heads' outputs are joined side by side, ` +
      `${config.n_head} × ${D} = ${config.n_embd} numbers, and mixed by attn_wo (the tutorials' W_O), one ` +
      `${config.n_embd} × ${config.n_embd} matrix: attn_wo · [head 0's output, …, head ${config.n_head - 1}'s] is what ` +
      "the layer's attention adds to the residual stream. Every square is one head.",
    look: "The squares of one layer side by side: heads that look at different places.",
    question: "In the selected row, which head of this layer puts the most weight on the character just before?",
    answer() {
      const i = rowOf(state.view);
      if (i < 1) return "The first row reads only the boundary token: pick a later row.";
      const weights = state.view.steps[i].layers[state.layer].weights.map((w) => w[i - 1]), h = MiniGPTModel.argmax(weights);
      return `Head ${h} of layer ${state.layer}: ${pct(weights[h])} of row ${i}'s weight on position ${i - 1}, ` +
        `${charOf(state.view.tokens[i - 1])} (the others: ` +
        `${weights.map((w, j) => (j === h ? null : `head ${j} ${pct(w)}`)).filter(Boolean).join(", ")}).`;
    } },
  { title: "One character at a time", section: "cache", subject: "cache-table", view: { mask: false },
    text: "Generating, a model computes each new position once: the keys and values of the positions before it are " +
      "kept (the key/value cache) and read again, and only the new query, key and value are made. Because of the mask " +
      "an earlier position never changes when a later one comes, so the cache is exact: the cached keys and values are " +
      "the ones a whole pass computes. “add the model's next character”, under the table, adds one position this way.",
    look: "The cache's rows, one a position, and the newest query's weights over them; then add a character: one more row.",
    question: "When the model writes the character after your name, how many keys does the query that predicts it read in each head?",
    answer() { // the last position's query predicts the character after the name: the cache panel's count
      const n = state.view.tokens.length, last = label(state.view.tokens[n - 1]);
      return `${n}: the query of the last position (“${last}”), which predicts the character after the name, reads ` +
        `${n - 1} key${n === 2 ? "" : "s"} from the cache (the boundary token${n > 2 ? ` and ${n - 2} character${n === 3 ? "" : "s"}` : ""}) ` +
        "and its own.";
    } },
  // its panel goes under the walk, beside the walk's last line: at the section's top, a walk taller than the
  // screen put the title 525 px above the screen once that line was brought into sight
  { title: "The whole model", section: "walk", subject: () => document.querySelector("#walk-steps [data-key=softmax]"),
    panelAfter: () => $("walk-steps").parentNode, view: { mask: false },
    text: "Around attention: the character's embedding plus its position's, normed (RMSNorm divides a vector by its " +
      "root mean square, with no learned scale in the default recipe); in each layer attention and an MLP each add " +
      "their output to the residual stream; no layer has a bias, so every number is a sum of weights times inputs. " +
      "The walk follows one position through every operation to the next character's probabilities.",
    look: "The walk's steps, from wte and wpe to the probabilities, at the selected position.",
    question: "After the last layer, which character does the model predict after the whole name, and how likely?",
    answer() {
      const p = MiniGPTModel.softmax(Array.from(lastStep().logits)), t = MiniGPTModel.argmax(p);
      return `${charOf(t)}, with probability ${fmt(p[t], 3)}.`;
    } },
  { title: "Why this character", section: "why", subject: "why-toward", view: { mask: false },
    text: "The stream lm_head reads is a sum: the embeddings (the character and its position themselves), what each " +
      "head wrote and what each MLP wrote. So a character's logit splits exactly into one term per part, and against a " +
      "rival character into what each part adds to the difference.",
    look: "The terms toward the character explained at the selected row, and against the runner-up.",
    question: "At the selected row, which part writes the most toward the character explained there?",
    answer() {
      const i = rowOf(state.view), s = state.view.steps[i], found = MiniGPTModel.attribution(state.model, s, switchedOff());
      const t = state.why.target !== null ? state.why.target : MiniGPTModel.argmax(Array.from(s.logits));
      const best = found.parts.reduce((a, b) => (b.terms[t] > a.terms[t] ? b : a));
      return `At row ${i} (${charOf(state.view.tokens[i])}), ${best.name} writes the most toward ${charOf(t)}: ` +
        `${fmt(best.terms[t], 3)} of its logit.`;
    } },
  { title: "Two names", section: "patch", subject: "patch-grid", view: { mask: false, patchGrid: "parts" },
    text: "Set a second name beside yours: where do the two differ inside the model? Copying one part's output at one " +
      "position from one name into the other (activation patching) shows which part carries the difference. The " +
      "second name follows yours (its first character changed) until you type one.",
    look: "The grid of heads and MLPs by positions: each cell, the share of the difference that copying that part's output there closes.",
    question: "Which part, copied from the second name into yours at one position, closes most of the difference in what they predict after their last characters?",
    answer() {
      const a = state.view, off = switchedOff(), b = analyse(state.second, off);
      const pA = probsOf(a.steps[a.steps.length - 1]), pB = probsOf(b.steps[b.steps.length - 1]);
      if (b.tokens.length < 2 || totalVariation(pA, pB) < 1e-12) return "Type a second name below that the model reads differently.";
      // the grid of heads and MLPs the patching panel draws, its cells ranked (position by position, as read)
      const rows = patchGrid(a, b, off, "parts"), common = rows[0].shares.length;
      const ranked = [];
      for (let t = 0; t < common; t++) for (const row of rows) ranked.push({ name: row.name, t, share: row.shares[t] });
      ranked.sort((x, y) => y.share - x.share);
      return { text: "Copied alone, the parts that close the most: " +
        ranked.slice(0, 3).map((r) => `${r.name} at position ${r.t}, ${fmt(100 * r.share, 1)}%`).join("; ") +
        ` (of ${rows.length} heads and MLPs at ${common} positions, ${ranked.length} cells). The ten that close the most:`,
               table: [["part", "position", "share closed"],
                       ...ranked.slice(0, 10).map((r) => [r.name, String(r.t), `${fmt(100 * r.share, 1)}%`])] };
    } },
  { title: "Over training", section: "type", subject: "grid", phoneBefore: "grid", view: { mask: false },
    keepSlider: true,
    text: "The run kept its weights at a few steps. Drag “watch it train” (here, in the lesson) or play it: the heads begin spread out and " +
      "take their patterns as the loss falls, and every number on the page follows the step.",
    look: "The selected head's square and its label as the slider moves.",
    question: "From which training step on does the selected head have the label it ends with?",
    answer() {
      const snaps = DATA.snapshots;
      if (!snaps || !DATA.roles.labels) return "This page has no training snapshots.";
      const final = DATA.roles.labels[state.layer][state.head];
      const labels = snaps.roles.map((r) => (r ? r.labels[state.layer][state.head] : final));
      let k = labels.length - 1;
      while (k > 0 && labels[k - 1] === final) k -= 1;
      return `From step ${snaps.steps[k].toLocaleString("en")}: “${final}”.`;
    } },
];

const sliderHome = $("training-steps").parentNode; // the header

function buildLessons() {
  // the course in the header: every lesson a button with its number and name, the one open marked
  LESSONS.forEach((l, n) => {
    const button = el("button", { type: "button", title: `${n + 1}. ${l.title}`, "aria-label": `${n + 1}. ${l.title}`,
                                  "data-lesson": String(n + 1) },
                      `${n + 1}`, el("span", { class: "lesson-name" }, `. ${l.title}`));
    button.addEventListener("click", () => openLesson(n));
    $("course-list").append(el("li", {}, button));
  });
  // the contents, in a corner of the screen: a lesson (or the free page) opens from anywhere on the page
  const fromContents = (n) => { $("contents").open = false; openLesson(n); };
  LESSONS.forEach((l, n) => {
    const button = el("button", { type: "button" }, l.title);
    button.addEventListener("click", () => fromContents(n));
    $("lesson-list").append(el("li", {}, button));
  });
  $("contents-free").addEventListener("click", () => fromContents(null));
  // the panel moves into the next lesson's section, taking the focused button out of the page for a moment:
  // the focus is put back on it (on the lesson's title when it is now disabled), not left on the page's body
  const step = (button, by) => button.addEventListener("click", () => {
    openLesson(state.lesson + by);
    (button.disabled ? $("lesson-title") : button).focus({ preventScroll: true });
  });
  $("lesson-title").tabIndex = -1;
  step($("lesson-prev"), -1);
  step($("lesson-next"), 1);
  $("lesson-close").addEventListener("click", () => openLesson(null));
  $("lesson-answer-box").addEventListener("toggle", drawLesson);
}

// Open lesson n (0-based; null: the free page): its view set, its text moved to the top of its section.
function openLesson(n, scroll = true, setView = true) {
  state.lesson = n === null || n < 0 || n >= LESSONS.length ? null : n;
  const panel = $("lesson-panel");
  hide(panel, state.lesson === null);
  for (const list of [[$("contents-free"), ...$("lesson-list").querySelectorAll("button")],
    [null, ...$("course-list").querySelectorAll("button")]]) {
    list.forEach((button, k) => button && button.setAttribute("aria-current",
      String(k === (state.lesson === null ? 0 : state.lesson + 1))));
  }
  // a lesson that needs the training slider holds it, below its question; it goes back to the header after
  const slider = $("training-steps"), sliderHere = state.lesson !== null && Boolean(LESSONS[state.lesson].keepSlider);
  if (sliderHere) $("lesson-question").parentNode.after(slider);
  else if (slider.parentNode !== sliderHome) sliderHome.append(slider);
  if (state.lesson === null) delete $("lesson").dataset.lessonAt; // the free page: every panel's own words
  if (state.lesson !== null) {
    const lesson = LESSONS[state.lesson];
    if (setView) Object.assign(state, { show: lesson.view.show || "weights" });
    if (setView) state.off.unmasked = Boolean(lesson.view.mask);
    if (setView && lesson.view.patchGrid) state.patchGrid = lesson.view.patchGrid;
    for (const radio of document.querySelectorAll("input[name=show]")) radio.checked = radio.value === state.show;
    placePanel(lesson);
    write($("lesson-title"), `Lesson ${state.lesson + 1} of ${LESSONS.length}: ${lesson.title}`);
    write($("lesson-text"), lesson.text);
    write($("lesson-look"), lesson.look);
    write($("lesson-question"), lesson.question);
    $("lesson-prev").disabled = state.lesson === 0;
    $("lesson-next").disabled = state.lesson === LESSONS.length - 1;
    $("lesson-answer-box").open = false;
  }
  changed(setView ? "text" : "lesson");
  if (state.lesson !== null && scroll) bringIntoView(LESSONS[state.lesson]);
}

// On the first screen the panel spans its columns, over the sections (main says which the lesson is about, for
// a phone's one column); below it, the panel opens its section. In a phone's one column, where the panel and
// its subject are each about half the screen, a lesson may name what the panel goes just above instead
// (`phoneBefore`), so that nothing between them takes the room.
const phone = matchMedia("(max-width: 700px)");
function placePanel(lesson) {
  const panel = $("lesson-panel"), section = $(lesson.section), first = section.parentNode === $("lesson");
  if (lesson.panelAfter) lesson.panelAfter().after(panel);
  else if (lesson.phoneBefore && phone.matches) $(lesson.phoneBefore).before(panel);
  else (first ? $("lesson") : section).prepend(panel);
  if (first) $("lesson").dataset.lessonAt = lesson.section;
  else delete $("lesson").dataset.lessonAt;
}
phone.addEventListener("change", () => state.lesson !== null && placePanel(LESSONS[state.lesson]));

// The lesson's panel at the top of the screen, and what its question asks about in sight above the course's
// contents (a bar along a phone's bottom edge): its section, drawn when seen, is drawn first (its id comes with
// "lesson"), so that it is measured as it will look. Where the panel and its subject do not both fit, the
// title stays at the top and the subject starts below it: a learner scrolls on from where the lesson begins.
function bringIntoView(lesson) {
  changed("lesson", lesson.section);
  const subject = subjectOf(lesson);
  if (lesson.panelAfter && subject) { // the subject just above the panel: both from the subject's top
    subject.scrollIntoView({ block: "start" });
    return;
  }
  $("lesson-panel").scrollIntoView({ block: "start" });
  const floor = Math.min(window.innerHeight, $("contents").getBoundingClientRect().top);
  const below = subject ? subject.getBoundingClientRect().bottom - floor : 0;
  // in whole pixels, down: a fraction rounds up, and the title's top went a fraction of a pixel off the screen
  if (below > 0) window.scrollBy(0, Math.floor(Math.min(below, $("lesson-title").getBoundingClientRect().top)));
}
const subjectOf = (lesson) => (typeof lesson.subject === "function" ? lesson.subject() : $(lesson.subject || lesson.section));

// The answer, from the numbers on the page now: redrawn with everything else while it is open (some take
// hundreds of forward passes, which a keystroke should not wait for while the answer is folded).
// An answer is a line, or a line and a table ({text, table: [heading, ...rows]}).
function drawLesson() {
  if (state.lesson === null || !$("lesson-answer-box").open) return;
  const answer = LESSONS[state.lesson].answer(), box = $("lesson-answer");
  if (typeof answer === "string") {
    write(box, answer);
    return;
  }
  const [heading, ...rows] = answer.table;
  box.replaceChildren(answer.text, el("table", { class: "numbers lesson-table" },
    el("tr", {}, ...heading.map((t) => el("th", { scope: "col" }, t))),
    ...rows.map((row) => el("tr", {}, ...row.map((t) => el("td", {}, t))))));
}

// a panel's own lesson (its registry line's `lesson`), after the course's
const addLesson = (lesson) => LESSONS.push(lesson);

return { LESSONS, addLesson, bringIntoView, buildLessons, drawLesson, openLesson, subjectOf };
})();
