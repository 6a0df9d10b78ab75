// snapshots.js: watching attention form, at the run's training snapshots. A part of the
// explorer page (state.js lists the parts).

const Snapshots = (() => {
const { $, DATA, changed, config, finalModel, state } = State;

const decoded = new Map(); // snapshot index -> its model, decoded once

function showSnapshot(index) {
  const snaps = DATA.snapshots, step = snaps.steps[index];
  const exact = step === snaps.checkpoint_step && index === snaps.steps.lastIndexOf(step);
  state.snapshot = exact ? null : index;
  if (!exact && !decoded.has(index)) decoded.set(index, MiniGPTModel.loadSnapshot(config, snaps, index));
  state.model = exact ? finalModel : decoded.get(index);
  $("step-slider").value = index;
  $("step-value").textContent = `step ${step.toLocaleString("en")}${exact ? " (the checkpoint)" : ""}, ` +
    `snapshot ${index + 1} of ${snaps.steps.length}`;
  $("ablation-note").textContent = exact ? "" : `The costs, the switches' mean outputs and the labels are this step's; ` +
    `the rows keep the checkpoint's order (step ${snaps.checkpoint_step.toLocaleString("en")}).`;
  changed("snapshot");
}

let playing = null;
const isPlaying = () => playing !== null;
function play() {
  if (playing) return stopPlaying();
  const slider = $("step-slider");
  if (+slider.value >= +slider.max) showSnapshot(0);
  $("play").classList.add("playing");
  playing = setInterval(() => {
    if (+slider.value >= +slider.max) return stopPlaying();
    showSnapshot(+slider.value + 1);
  }, 700);
}
function stopPlaying() {
  clearInterval(playing);
  playing = null;
  $("play").classList.remove("playing");
}

function buildSteps() {
  const snaps = DATA.snapshots;
  if (!snaps || !snaps.steps.length) return;
  $("training-steps").hidden = false;
  Object.assign($("step-slider"), { min: 0, max: snaps.steps.length - 1 });
  $("step-slider").addEventListener("input", (event) => { stopPlaying(); showSnapshot(+event.target.value); });
  $("play").addEventListener("click", play);
  const last = snaps.steps.lastIndexOf(snaps.checkpoint_step);
  $("step-slider").value = last >= 0 ? last : snaps.steps.length - 1;
  $("step-value").textContent = `step ${snaps.checkpoint_step.toLocaleString("en")} (the checkpoint), snapshot ${+$("step-slider").value + 1} of ${snaps.steps.length}`;
  Card.moveStepMarker(snaps.checkpoint_step); // the curve's marker and the run's loss, before the slider first moves
}

return { buildSteps, isPlaying, showSnapshot };
})();
