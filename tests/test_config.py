import pytest

from minigpt.config import Config
from minigpt.recipes.checks import validate
from minigpt.recipes.loading import load_config, recipe_toml, resolve_config_path
from minigpt.common.errors import UsageError


def test_default_toml_is_the_builtin_default():
    assert load_config("default") == Config()


def test_shipped_configs_load():
    micro = load_config("microgpt")
    assert (micro.model.n_embd, micro.model.n_head, micro.model.n_layer, micro.model.block_size) == (16, 4, 1, 16)
    assert (micro.train.beta1, micro.train.beta2, micro.train.lr, micro.train.steps) == (0.85, 0.99, 0.01, 1000)
    mm = load_config("makemore")
    assert (mm.model.n_layer, mm.model.n_embd, mm.train.batch_size, mm.train.lr) == (4, 64, 32, 5e-4)


def test_set_overrides_parse_toml_values():
    cfg = load_config(None, ["model.dropout=0", "train.eval_interval=50", "train.device=cpu", "model.final_norm=false"])
    assert cfg.model.dropout == 0.0 and isinstance(cfg.model.dropout, float)
    assert cfg.train.eval_interval == 50 and cfg.train.device == "cpu" and cfg.model.final_norm is False


@pytest.mark.parametrize(
    "override, message",
    [
        ("model.nope=1", "unknown key 'model.nope'"),
        ("optim.lr=1", "unknown section 'optim'"),
        ("model.n_layer=two", "must be int"),
        ("model.n_layer=1.5", "must be int"),
        ("model.n_embd=30", "divisible"),
        ("model.n_layer=0", "must be positive"),
        ("train.lr=-0.1", "must be positive"),
        ("train.muon_lr=-1", "train.muon_lr must be positive"),
        ("train.muon_momentum=1.0", r"train.muon_momentum must be in \[0, 1\)"),
        ("model.dropout=1.0", r"\[0, 1\)"),
        ("train.lr_schedule=step", "one of constant, linear, cosine"),
        ("model.vocab_size=30", "unknown key"),
        ("dropout", "section.key=value"),
        ("train.lr=nan", "train.lr must be a finite number, got nan"),
        ("train.time_limit=inf", "train.time_limit must be a finite number, got inf"),
        ("model.dropout=-inf", "model.dropout must be a finite number"),
        ("sample.temperature=nan", "sample.temperature must be a finite number"),
    ],
)
def test_bad_overrides_are_named(override, message):
    with pytest.raises(UsageError, match=message):
        load_config(None, [override])


def test_bad_config_files(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[model\nn_layer = 2\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_config(broken)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[train]\nstepz = 2\n")
    with pytest.raises(UsageError, match="unknown.toml: unknown key 'train.stepz'"):
        load_config(unknown)
    with pytest.raises(UsageError, match="config file not found"):
        load_config(tmp_path / "missing.toml")


def test_resolved_config_reads_back(tmp_path):
    cfg = load_config("microgpt", ["train.steps=7"])
    path = tmp_path / "config.toml"
    path.write_text(recipe_toml(cfg))
    assert load_config(path) == cfg


def test_non_finite_values_are_refused_from_files_and_from_code(tmp_path):
    recipe = tmp_path / "nan.toml"
    recipe.write_text("[train]\nweight_decay = nan\n")
    with pytest.raises(UsageError, match="nan.toml: train.weight_decay must be a finite number"):
        load_config(recipe)
    config = Config()
    config.train.min_lr = float("inf")
    with pytest.raises(UsageError, match="train.min_lr must be a finite number"):
        validate(config)


def test_auto_scale_adapts_a_small_file_and_leaves_given_keys_alone():
    from minigpt.runs.setup import SMALL_DATA, SMALL_DATA_RECIPE, scale_to_data

    config = load_config("default", ["train.steps=7"])
    notes = scale_to_data(config, 4_647)
    assert config.train.batch_size == SMALL_DATA_RECIPE["train.batch_size"] < Config().train.batch_size
    assert config.train.muon_lr == SMALL_DATA_RECIPE["train.muon_lr"] > Config().train.muon_lr
    assert config.model.dropout == SMALL_DATA_RECIPE["model.dropout"] == 0 == config.model.attn_dropout
    assert (config.train.lr_schedule, config.train.warmup_steps) == ("linear", 10)
    assert config.train.steps == 7  # given on the command line: left as the user said
    assert len(notes) == 1 and "4,647 training names is a small file" in notes[0] and "batch_size 64 (was 256)" in notes[0]
    assert config.train.auto_scale is False  # what a resumed run or a reread config.toml sees: no second scaling
    large = load_config("default")
    assert scale_to_data(large, SMALL_DATA) == [] and large.train == Config().train
    exact = load_config("makemore")
    assert scale_to_data(exact, 100) == [] and exact.train.batch_size == 32


def test_auto_scale_gives_a_large_file_under_a_short_time_limit_the_small_files_batch_and_rates_and_no_dropout():
    """At 15 to 60 s on makemore's names batches of 64 at twice the rates won by 0.05 to 0.16 nats, and then no
    dropout by 0.02 to 0.05 more (docs/speed.md): a minute's run is short of steps as a small file is, and too short
    to learn its names by heart; a longer one, or one by steps, keeps the recipe."""
    from minigpt.runs.setup import SHORT_BUDGET, SHORT_BUDGET_RECIPE, SMALL_DATA, scale_to_data

    short = load_config("default", [f"train.time_limit={SHORT_BUDGET}"])
    notes = scale_to_data(short, 31_033)
    assert (short.train.batch_size, short.train.lr, short.train.muon_lr, short.model.dropout) == \
        tuple(SHORT_BUDGET_RECIPE.values()) == (64, 0.006, 0.02, 0.0)
    assert short.train.batch_size < Config().train.batch_size and short.train.steps == Config().train.steps
    assert notes == [f"31,033 training names in a time limit of {SHORT_BUDGET} s ({SHORT_BUDGET} s or less) is a "
                     "short run, so train.auto_scale set batch_size 64 (was 256), lr 0.006 (was 0.003), muon_lr 0.02 "
                     "(was 0.01), dropout 0 (was 0.1)"]
    for longer in (load_config("default", [f"train.time_limit={SHORT_BUDGET + 1}"]), load_config("default")):
        assert scale_to_data(longer, SMALL_DATA) == [] and longer.train.batch_size == Config().train.batch_size
        assert longer.model.dropout == Config().model.dropout > 0
    given = load_config("default", ["train.time_limit=30", "train.batch_size=128", "model.dropout=0.2"])
    scale_to_data(given, SMALL_DATA)
    assert (given.train.batch_size, given.model.dropout) == (128, 0.2)  # as given
    assert given.train.lr == SHORT_BUDGET_RECIPE["train.lr"]


def test_auto_scale_gives_a_run_of_45_s_or_less_on_a_large_file_two_layers_unless_the_depth_was_given():
    """At 15, 30 and 45 s two layers beat four by 0.02 to 0.03 nats at two threads, at 60 s within seed noise
    (docs/speed.md): the depth changes up to SHALLOW_BUDGET alone, and never a depth set on the command line."""
    from minigpt.runs.setup import SHALLOW_BUDGET, SHORT_BUDGET, SMALL_DATA, scale_to_data

    shallow = load_config("default", [f"train.time_limit={SHALLOW_BUDGET}"])
    notes = scale_to_data(shallow, SMALL_DATA)
    assert shallow.model.n_layer == 2 and notes[0].endswith(f"({SHALLOW_BUDGET} s or less) is a short run, so "
                                                            "train.auto_scale set batch_size 64 (was 256), lr 0.006 "
                                                            "(was 0.003), muon_lr 0.02 (was 0.01), dropout 0 (was 0.1), "
                                                            "n_layer 2 (was 4)")
    for kept in (load_config("default", [f"train.time_limit={SHORT_BUDGET}"]),
                 load_config("default", ["train.time_limit=15", "model.n_layer=3"])):
        scale_to_data(kept, SMALL_DATA)
        assert kept.model.n_layer == (3 if "model.n_layer" in kept.given else Config().model.n_layer)
        assert kept.train.batch_size == 64  # the rest of the short-run rule still applies


@pytest.mark.parametrize("n_train, steps, warmup, every", [(3, 300, 30, 20), (180, 300, 30, 20), (900, 350, 35, 20),
                                                          (1_800, 700, 70, 40)])
def test_auto_scale_fits_the_schedule_to_a_very_small_file(n_train, steps, warmup, every):
    """200 names overfit from the end of a 100-step warm-up on with 2,000 steps: a very small file gets a schedule
    of about EPOCHS_TO_BEST passes, evaluated often enough to catch its best (58 §5; docs/recipes.md)."""
    from minigpt.runs.setup import TINY_DATA, TINY_DATA_RECIPE, scale_to_data

    config = load_config("default")
    notes = scale_to_data(config, n_train)
    assert (config.train.steps, config.train.warmup_steps, config.train.eval_interval) == (steps, warmup, every)
    assert config.model.dropout == TINY_DATA_RECIPE["model.dropout"] > Config().model.dropout  # learned by heart soon
    assert config.train.lr == Config().train.lr  # not the small file's faster rates
    assert f"a small file (under {TINY_DATA:,})" in notes[0] and f"steps {steps} (was 800)" in notes[0]
    given = load_config("default", ["train.steps=50"])
    scale_to_data(given, n_train)
    assert given.train.steps == 50  # given on the command line: left as the user said


def test_a_run_with_no_validation_names_says_it_cannot_stop_early(tmp_path):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    three = tmp_path / "three.txt"
    three.write_text("anna\nbob\ncarla\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "--data", str(three), "--out", str(tmp_path / "run"), "--steps", "2"])
    assert result.exit_code == 0, result.output
    panel = " ".join(result.stderr.replace("│", " ").split())
    assert "stopping none: the file is too small to hold names back for validation" in panel
    assert "ends on its last weights" in panel and "early after" not in panel and "best weights" not in panel


def test_checkpoints_from_before_early_stopping_resume_without_it():
    from minigpt.recipes.loading import config_from_dict

    old = Config().to_dict()
    for key in ("patience", "auto_scale"):
        del old["train"][key]
    config = config_from_dict(old)
    assert config.train.patience == 0 and config.train.auto_scale is False
    assert config_from_dict(Config().to_dict()).train.patience == Config().train.patience


def test_the_start_panel_says_what_auto_scale_chose_and_the_run_records_it(names_file, tmp_path):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    result = CliRunner().invoke(app, ["train", "--data", str(names_file), "--out", str(tmp_path / "run"), "--steps", "2"])
    assert result.exit_code == 0, result.output
    panel = " ".join(result.stderr.replace("│", " ").split())  # the panel wraps its lines between borders
    assert "is a small file" in panel and "batch_size 64 (was 256)" in panel
    recorded = load_config(tmp_path / "run" / "config.toml")
    assert recorded.train.batch_size == 64 and recorded.train.steps == 2 and recorded.train.auto_scale is False


def test_steps_given_turn_a_recipes_time_limit_off_and_both_given_is_an_error():
    config = load_config("quality", ["train.steps=3"])
    assert config.train.steps == 3 and config.train.time_limit == 0
    assert config.notes == ["train.steps 3 was given, so the recipe's time limit of 900 s is off"]
    assert load_config("quality").train.time_limit == 900  # the recipe alone keeps it
    with pytest.raises(UsageError, match=r"--steps \(3\) and --time-limit \(60 s\) both say how long to train"):
        load_config("quality", ["train.steps=3", "train.time_limit=60"])
    assert load_config("tiny", ["train.steps=3", "train.time_limit=0"]).notes == []


def test_the_start_panel_says_the_time_limit_is_off(names_file, tmp_path):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    recipe = tmp_path / "timed.toml"
    recipe.write_text(resolve_config_path("tiny").read_text().replace("[train]", "[train]\ntime_limit = 900.0"))
    result = CliRunner().invoke(app, ["train", "-c", str(recipe), "--steps", "2", "--data", str(names_file),
                                      "--out", str(tmp_path / "run"), "--set", "train.eval_interval=2"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "time limit of 900 s is off" in result.stderr and "2 steps of" in result.stderr


def test_auto_scale_fits_the_block_size_to_the_longest_name_unless_given():
    from minigpt.runs.setup import LONGEST_FITTED, fit_block_size

    names = ["anna", "x" * 23]
    config = load_config("default")
    notes = fit_block_size(config, names)
    assert config.model.block_size == 24 and "longest training name has 23 characters" in notes[0]
    given = load_config("default", ["model.block_size=16"])
    assert fit_block_size(given, names) == [] and given.model.block_size == 16  # what the user set stays
    exact = load_config("tiny")  # an exact recipe does not adapt
    assert fit_block_size(exact, names) == [] and exact.model.block_size == 16
    short = load_config("default")
    assert fit_block_size(short, ["anna"]) == [] and short.model.block_size == 16  # only ever larger
    huge = load_config("default")
    assert "still cut" in fit_block_size(huge, ["y" * 500])[0] and huge.model.block_size == LONGEST_FITTED + 1


def test_auto_scale_gives_a_run_of_30_s_or_less_on_a_large_file_a_short_warmup_and_the_rate_linear_to_0():
    """At 15 and 30 s the rate linear to 0 after 10 warm-up steps beat the cosine after 100 by 0.012 and 0.014 nats,
    at 45 and 60 s within seed noise (docs/speed.md): the rule stops at HALF_MINUTE, and keys given stay."""
    from minigpt.runs.setup import HALF_MINUTE, SMALL_DATA, scale_to_data

    half = load_config("default", [f"train.time_limit={HALF_MINUTE}"])
    notes = scale_to_data(half, SMALL_DATA)
    assert (half.train.lr_schedule, half.train.warmup_steps, half.model.n_layer) == ("linear", 10, 2)
    assert notes[0].endswith(f"({HALF_MINUTE} s or less) is a short run, so train.auto_scale set batch_size 64 "
                             "(was 256), lr 0.006 (was 0.003), muon_lr 0.02 (was 0.01), dropout 0 (was 0.1), "
                             "n_layer 2 (was 4), lr_schedule linear (was cosine), warmup_steps 10 (was 100)")
    longer = load_config("default", [f"train.time_limit={HALF_MINUTE + 1}"])
    scale_to_data(longer, SMALL_DATA)
    assert (longer.train.lr_schedule, longer.train.warmup_steps) == (Config().train.lr_schedule, 100)
    given = load_config("default", ["train.time_limit=20", "train.warmup_steps=50"])
    scale_to_data(given, SMALL_DATA)
    assert (given.train.lr_schedule, given.train.warmup_steps) == ("linear", 50)


def test_auto_scale_gives_a_run_of_15_s_or_less_on_a_large_file_slower_embeddings_and_no_weight_decay():
    """At 15 s the embeddings at a tenth of the rate with no weight decay won by 0.010 nats over 8 seeds, and at 30
    and 45 s were within seed noise (docs/speed.md): the rule stops at QUARTER_MINUTE."""
    from minigpt.runs.setup import QUARTER_MINUTE, SMALL_DATA, scale_to_data

    quarter = load_config("default", [f"train.time_limit={QUARTER_MINUTE}"])
    notes = scale_to_data(quarter, SMALL_DATA)
    assert (quarter.train.embedding_lr_scale, quarter.train.weight_decay, quarter.model.n_layer) == (0.1, 0.0, 2)
    assert notes[0].endswith("n_layer 2 (was 4), lr_schedule linear (was cosine), warmup_steps 10 (was 100), "
                             "embedding_lr_scale 0.1 (was 1), weight_decay 0 (was 0.1)")
    longer = load_config("default", [f"train.time_limit={QUARTER_MINUTE + 1}"])
    scale_to_data(longer, SMALL_DATA)
    assert longer.train.embedding_lr_scale == 1.0 and longer.train.weight_decay == Config().train.weight_decay
    assert longer.model.n_layer == 2
