import pytest
import torch

from minigpt.config import Config, check_recipe
from minigpt.errors import UsageError
from minigpt.formats.recipes import load_config, recipe_toml, resolve_config_path


def test_default_toml_is_the_builtin_default_made_from_config_py():
    """Each default is written once, in config.py: configs/default.toml is made from it by code."""
    from minigpt.common.bundled import config_dir
    from minigpt.formats.recipes import default_recipe_toml

    assert load_config("default") == Config()
    made = default_recipe_toml()
    assert (config_dir() / "default.toml").read_text(encoding="utf-8") == made, (
        "configs/default.toml was not made again: python -m minigpt.formats.recipes"
    )


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
        check_recipe(config)


@pytest.mark.parametrize(
    "n_train, time_limit, recipe",
    [
        (3, 0, "few"),
        (2_499, 60, "few"),
        (2_500, 0, "small"),
        (19_999, 15, "small"),
        (20_000, 15, "sprint"),
        (31_033, 15.5, "short"),
        (31_033, 60, "short"),
        (31_033, 61, "default"),
        (31_033, 0, "default"),
    ],
)
def test_auto_scale_trains_the_bundled_recipe_that_fits_the_data_and_the_time_limit(n_train, time_limit, recipe):
    """With no recipe named, one rule picks a file in configs/ by the training names and the time limit
    (docs/recipes.md): the run is that file's recipe, key for key, and the notes name its path and why."""
    from minigpt.formats.recipes import fit_recipe_to_data

    config = load_config(None, [f"train.time_limit={time_limit}"] if time_limit else [])
    notes = fit_recipe_to_data(config, n_train)
    expected = load_config(recipe, [f"train.time_limit={time_limit}"] if time_limit else [])
    assert (config.model, config.train, config.sample) == (expected.model, expected.train, expected.sample)
    assert config.source == resolve_config_path(recipe)
    assert notes[0].split(":")[0].endswith(f"configs/{recipe}.toml")
    assert f"{n_train:,} training name" in notes[0]


def test_no_recipe_dict_is_left_in_the_code_every_fitted_recipe_is_a_file():
    """The small file's, the short run's and the sprint's recipes differ from the default only as their files say:
    the sprint is the short run with slower embeddings and no weight decay (kept at 15 s by minigpt compare)."""
    short, sprint = load_config("short"), load_config("sprint")
    assert (sprint.train.embedding_lr_scale, sprint.train.weight_decay) == (0.1, 0.0)
    sprint.train.embedding_lr_scale, sprint.train.weight_decay = (
        short.train.embedding_lr_scale,
        short.train.weight_decay,
    )
    assert sprint == short
    small = load_config("small")
    assert (small.model.n_layer, small.train.batch_size, small.model.dropout) == (4, 64, 0.2)
    assert load_config("few").model.n_layer <= small.model.n_layer  # fewer names never get a deeper model
    import minigpt.runs.setup as setup

    assert not any(name.endswith("_RECIPE") for name in vars(setup))


def test_a_users_recipe_file_and_every_key_given_are_never_overridden(tmp_path):
    """A recipe named with --config trains as written, however small the file or short the time limit; keys given
    on the command line stay over a chosen recipe too, and one that the recipe holds already is said to change
    nothing."""
    from minigpt.formats.recipes import fit_recipe_to_data
    from minigpt.runs.setup import fit_to_data

    mine = tmp_path / "mine.toml"
    mine.write_text("[model]\nn_layer = 4\n[train]\nbatch_size = 128\nlr = 0.004\n")
    config = load_config(mine, ["train.time_limit=30"])
    notes = fit_to_data(config, ["anna"] * 31_033)
    assert (config.model.n_layer, config.train.batch_size, config.train.lr) == (4, 128, 0.004)
    assert notes == [str(mine)] and config.train.auto_scale is False
    given = load_config(None, ["train.time_limit=30", "train.batch_size=128", "model.dropout=0.2"])
    fit_recipe_to_data(given, 31_033)
    assert (given.train.batch_size, given.model.dropout, given.train.lr) == (128, 0.2, load_config("short").train.lr)
    in_vain = load_config(None, ["model.dropout=0.2"])
    assert fit_recipe_to_data(in_vain, 4_647)[1] == "model.dropout = 0.2 changes nothing: the recipe has it already"


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
    from minigpt.formats.recipes import config_from_dict

    old = Config().to_dict()
    for key in ("patience", "auto_scale"):
        del old["train"][key]
    config = config_from_dict(old)
    assert config.train.patience == 0 and config.train.auto_scale is False
    assert config_from_dict(Config().to_dict()).train.patience == Config().train.patience


def test_the_start_panel_says_what_auto_scale_chose_and_the_run_records_it(names_file, tmp_path):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    result = CliRunner().invoke(
        app, ["train", "--data", str(names_file), "--out", str(tmp_path / "run"), "--steps", "2"]
    )
    assert result.exit_code == 0, result.output
    panel = " ".join(result.stderr.replace("│", " ").split())  # the panel wraps its lines between borders
    assert "recipe configs/few.toml: 270 training names, fewer than 2,500" in panel
    written = (tmp_path / "run" / "config.toml").read_text()
    assert "configs/few.toml, chosen by train.auto_scale for 270 training names" in written.splitlines()[0]
    recorded = load_config(tmp_path / "run" / "config.toml")
    assert recorded.train.batch_size == 64 and recorded.train.steps == 2 and recorded.train.auto_scale is False
    again = CliRunner().invoke(
        app,
        [
            "train",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "again"),
            "--steps",
            "2",
            "--config",
            str(resolve_config_path("few")),
            "--set",
            "train.auto_scale=false",
        ],
    )
    assert again.exit_code == 0, again.output  # the file that was named, with auto_scale off: the same run
    weights = [torch.load(tmp_path / run / "best.pt", weights_only=True)["model"] for run in ("run", "again")]
    assert weights[0].keys() == weights[1].keys() and all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


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
    result = CliRunner().invoke(
        app,
        [
            "train",
            "-c",
            str(recipe),
            "--steps",
            "2",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "run"),
            "--set",
            "train.eval_interval=2",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "time limit of 900 s is off" in result.stderr and "2 steps of" in result.stderr


def test_auto_scale_fits_the_block_size_to_the_longest_name_unless_given():
    from minigpt.runs.setup import LONGEST_FITTED, fit_block_size

    names = ["anna", "x" * 23]
    config = load_config()
    notes = fit_block_size(config, names)
    assert config.model.block_size == 24 and "longest training name has 23 characters" in notes[0]
    given = load_config(None, ["model.block_size=16"])
    assert fit_block_size(given, names) == [] and given.model.block_size == 16  # what the user set stays
    written = load_config("default")  # a recipe file named is trained as written
    assert fit_block_size(written, names) == [] and written.model.block_size == 16
    exact = load_config("tiny")  # an exact recipe does not adapt
    assert fit_block_size(exact, names) == [] and exact.model.block_size == 16
    short = load_config()
    assert fit_block_size(short, ["anna"]) == [] and short.model.block_size == 16  # only ever larger
    huge = load_config()
    assert "still cut" in fit_block_size(huge, ["y" * 500])[0] and huge.model.block_size == LONGEST_FITTED + 1


def test_every_bundled_recipe_holds_every_key_or_says_which_base_it_overrides():
    """A recipe file is read as written: the default holds every key (config.py's defaults), and every other
    says on its first line that the keys it leaves out are the default's."""
    import dataclasses
    import tomllib

    from minigpt.common.bundled import config_dir
    from minigpt.config import Config

    every = {
        f"{section.name}.{key.name}"
        for section in dataclasses.fields(Config)
        for key in dataclasses.fields(section.default_factory())
        if key.name != "vocab_size"
    }
    for path in sorted(config_dir().glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        held = {f"{section}.{key}" for section, values in tomllib.loads(text).items() for key in values}
        says = text.startswith("# Overrides configs/default.toml: every key not written here is the default's.")
        assert held == every or says, (path.name, sorted(every - held)[:5])


def test_the_core_config_holds_the_recipe_alone_and_the_command_lines_bookkeeping_lives_outside_it():
    """Config is the three sections; where a recipe came from and what fitting changed is formats/recipes.py's
    Recipe, a Config the command line reads, equal to a Config of the same keys."""
    from minigpt.formats.recipes import Recipe, as_recipe

    assert set(vars(Config())) == {"model", "train", "sample"}
    read = load_config("tiny", ["train.steps=7"])
    assert isinstance(read, Recipe) and read.given == {"train.steps"} and "train.steps" in read.written
    plain = Config()
    assert as_recipe(plain).train is plain.train and as_recipe(plain) == plain and read != plain
