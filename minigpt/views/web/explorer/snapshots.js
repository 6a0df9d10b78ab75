// snapshots.js: watching attention form, at the run's training snapshots: the slider and its play
// button write the step shown into the state (State.showSnapshot), and every panel follows it. A part
// of the explorer page (state.js lists the parts).

const Snapshots = (() => {
const { $, DATA, showSnapshot, snapshotShown, state } = State;

let timer = null;
function play() {
  if (state.playing) return stopPlaying();
  const slider = $("step-slider");
  if (+slider.value >= +slider.max) showSnapshot(0);
  $("play").classList.add("playing");
  state.playing = true; // the address then rewrites its entry rather than adding one a step
  timer = setInterval(() => {
    if (+slider.value >= +slider.max) return stopPlaying();
    showSnapshot(+slider.value + 1);
  }, 700);
}
function stopPlaying() {
  clearInterval(timer);
  state.playing = false;
  $("play").classList.remove("playing");
}

function buildSteps() {
  const snaps = DATA.snapshots;
  if (!snaps || !snaps.steps.length) return;
  $("training-steps").hidden = false;
  Object.assign($("step-slider"), { min: 0, max: snaps.steps.length - 1 });
  $("step-slider").addEventListener("input", (event) => { stopPlaying(); showSnapshot(+event.target.value); });
  $("play").addEventListener("click", play);
  drawStep();
}

// the slider and what it says: the step shown, and whose costs and labels the page shows
function drawStep() {
  const snaps = DATA.snapshots;
  if (!snaps || !snaps.steps.length) return;
  const index = snapshotShown(), exact = state.snapshot === null, step = exact ? snaps.checkpoint_step : snaps.steps[index];
  $("step-slider").value = index;
  $("step-value").textContent = `step ${step.toLocaleString("en")}${exact ? " (the checkpoint)" : ""}, ` +
    `snapshot ${index + 1} of ${snaps.steps.length}`;
  // the run keeps snapshots in 8 bits a number and the page carries them in 6: its numbers at a snapshot are
  // near the terminal's (inspect-attention --step), not equal to them
  $("step-precision").textContent = exact ? "" : "This step's weights are carried in 6 bits a number (the run keeps 8): " +
    "its figures here can differ from inspect-attention --step's in the second or third decimal.";
  $("ablation-note").textContent = exact ? "" : `The costs, the switches' mean outputs and the labels are this step's; ` +
    `the rows keep the checkpoint's order (step ${snaps.checkpoint_step.toLocaleString("en")}).`;
}

return { buildSteps, drawStep };
})();
