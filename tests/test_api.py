import re
import subprocess
import sys

import pytest

from minigpt import GPT, GPTConfig, UsageError, load_config, train


def test_public_names_are_the_functions_even_after_the_cli_imported_everything():
    import minigpt
    import minigpt.cli.main  # noqa: F401
    import minigpt.sampling  # noqa: F401
    import minigpt.training  # noqa: F401
    from minigpt import GPT, GPTConfig, Tokenizer, load_checkpoint, sample, train

    assert all(callable(f) for f in (GPT, GPTConfig, Tokenizer, load_checkpoint, sample, train))
    assert train.__module__ == "minigpt.runs.run" and sample.__module__ == "minigpt.runs.new_names"
    assert minigpt.__version__


def public_callables():
    """Every function of minigpt.__all__, and every public method of its classes (their __init__ included)."""
    import inspect

    import minigpt

    for name in minigpt.__all__[1:]:
        value = getattr(minigpt, name)
        if not inspect.isclass(value):
            yield name, value
            continue
        for attribute, member in vars(value).items():
            function = getattr(member, "__func__", member)  # a classmethod's or staticmethod's own function
            if inspect.isfunction(function) and (not attribute.startswith("_") or attribute == "__init__"):
                yield f"{name}.{attribute}", function


def test_every_public_function_says_the_type_of_each_argument_and_of_what_it_returns():
    """The public API is typed whole: mypy checks tests/typing/public_api.py's calls against these signatures
    (strictly), and an argument left unannotated would let anything through there unseen."""
    import inspect

    untyped = []
    for name, function in public_callables():
        signature = inspect.signature(function)
        bare = [p for p in signature.parameters.values() if p.annotation is p.empty and p.name not in ("self", "cls")]
        if bare or (signature.return_annotation is signature.empty and function.__name__ != "__init__"):
            untyped.append(f"{name}({', '.join(p.name for p in bare)})")
    assert not untyped
    assert len(list(public_callables())) > 30


def test_the_packages_names_are_one_list_for_python_for_tools_and_for_type_checkers():
    import ast
    from pathlib import Path

    import minigpt

    assert minigpt.__all__ == ["__version__", *minigpt._EXPORTS]
    tree = ast.parse(Path(minigpt.__file__).read_text(encoding="utf-8"))
    checked = next(node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
    seen = {(i.module, a.name) for i in checked.body if isinstance(i, ast.ImportFrom) for a in i.names}
    assert seen == {(module, name) for name, module in minigpt._EXPORTS.items()}


def test_importing_the_cli_does_not_import_torch():
    code = "import sys, minigpt.cli.main; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_command_leaves_its_objects_to_no_collection_at_exit():
    """Every command, on its way out, freezes what is alive, so that Python's exit does not scan torch's
    objects (about a second): atexit still runs, and sees them frozen."""
    code = (
        "import atexit, gc, sys; atexit.register(lambda: print(gc.get_freeze_count())); "
        "sys.argv = ['minigpt', 'plot', '--help']; from minigpt.cli.main import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 0


def test_the_python_api_checks_what_it_is_handed_as_the_command_line_does(trained_run, tmp_path):
    """minigpt's own errors, in one line, for what a notebook might hand it: a Config past its ranges, a path
    where a loaded checkpoint belongs, a names file where a list of names belongs."""
    import pytest

    from minigpt import Config, evaluate_names, explore, load_checkpoint, load_config, logit_lens, sample, train
    from minigpt.errors import UsageError

    run_dir, names_file = trained_run
    huge = load_config("tiny")
    huge.train.batch_size = 10**9
    with pytest.raises(UsageError, match="train.batch_size must be from 1 to 65,536"):
        train(huge, names_file, out_dir=tmp_path / "a")
    backwards = Config()
    backwards.train.steps = -5
    with pytest.raises(UsageError, match="train.steps must be positive"):
        train(backwards, names_file, out_dir=tmp_path / "b")
    with pytest.raises(UsageError, match="train takes a Config"):
        train({"train": {}}, names_file)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    ckpt = load_checkpoint(run_dir)
    with pytest.raises(UsageError, match="sample takes a loaded checkpoint"):
        sample(str(run_dir), num=2)
    with pytest.raises(UsageError, match="expected a list of names"):
        evaluate_names(ckpt.model, ckpt.tokenizer, names_file)
    with pytest.raises(UsageError, match="expected the tokenizer"):
        evaluate_names(ckpt.model, "abc", ["anna"])
    with pytest.raises(UsageError, match="logit_lens reads token ids"):
        logit_lens(ckpt.model, ckpt.tokenizer, "anna")
    with pytest.raises(UsageError, match="expected a checkpoint"):
        explore(42)


def test_every_writer_of_the_api_keeps_what_is_there_unless_told(trained_run, tmp_path):
    """attention_grid(...).save follows the overwrite policy explore(...).save and the commands follow."""
    pytest.importorskip("matplotlib")
    from minigpt import attention_grid
    from minigpt.errors import UsageError

    grid = attention_grid(trained_run[0], "emma")
    names, picture = tmp_path / "names.txt", tmp_path / "grid.png"
    names.write_text("emma\n", encoding="utf-8")
    picture.write_bytes(b"mine")
    with pytest.raises(UsageError, match="already exists; pass --overwrite"):
        grid.save(picture)
    assert picture.read_bytes() == b"mine"
    with pytest.raises(UsageError, match=r"would hold a PNG picture in a \.txt file"):
        grid.save(names, overwrite=True)  # a names file is never replaced by a picture
    assert names.read_text() == "emma\n"
    with pytest.raises(UsageError, match="is a checkpoint|in a .pt file"):
        grid.save(trained_run[0] / "best.pt", overwrite=True)
    assert grid.save(picture, overwrite=True).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("report, says", [(42, "got int"), ("losses", "got str"), (None, None)])
def test_train_checks_its_reporter_before_any_work(tmp_path, report, says):
    from minigpt import Reporter, load_config, train
    from minigpt.errors import UsageError

    if says is None:  # a reporter that is falsy (a list subclass, empty) is still a reporter, and still told

        class Heard(list, Reporter):
            def step(self, trainer):
                self.append(trainer.step)

        report = Heard()
        train(load_config("tiny", ["train.steps=3"]), out_dir=tmp_path / "r", quiet=True, report=report)
        assert report == [1, 2, 3]
        return
    with pytest.raises(UsageError, match=f"report takes a Reporter .*{says}"):
        train(load_config("tiny", ["train.steps=3"]), out_dir=tmp_path / "r", quiet=True, report=report)
    assert not (tmp_path / "r").exists()


def test_a_name_of_another_type_is_one_line(trained_run):
    from minigpt import attention_report, load_checkpoint
    from minigpt.errors import UsageError

    ckpt = load_checkpoint(trained_run[0])
    with pytest.raises(UsageError, match="a name \\(a string\\), got int"):
        attention_report(ckpt.model, ckpt.tokenizer, 42)


def test_an_imported_number_past_a_floats_range_is_one_line(trained_run, tmp_path):
    import json

    from minigpt.errors import UsageError
    from minigpt.formats.microgpt_json import import_microgpt
    from minigpt.formats.recipes import load_config
    from minigpt.runs.run import train

    run = train(load_config("microgpt", ["train.steps=1"]), out_dir=tmp_path / "mg", quiet=True)
    from minigpt.formats.microgpt_json import export_microgpt

    export_microgpt(run.run_dir, tmp_path / "mg.json")
    document = json.loads((tmp_path / "mg.json").read_text())
    document["state_dict"]["wte"][0][0] = 10**400
    (tmp_path / "big.json").write_text(json.dumps(document))
    with pytest.raises(UsageError, match="a weight is not a number a float32 holds"):
        import_microgpt(tmp_path / "big.json", tmp_path / "big.pt")
    document["state_dict"]["wte"][0][0] = 0.0
    document["bos"] = 10**400
    (tmp_path / "big.json").write_text(json.dumps(document))
    with pytest.raises(UsageError, match="bos a whole number of 401 digits"):
        import_microgpt(tmp_path / "big.json", tmp_path / "big.pt")


@pytest.mark.parametrize(
    "options, says",
    [
        ({"num": 10**30}, "--num must be at most"),
        ({"num": None}, "--num must be a whole number, got null"),
        ({"num": "5"}, "--num must be a whole number, got text"),
        ({"num": True}, "--num must be a whole number"),
        ({"temperature": "hot"}, "--temperature must be a number"),
        ({"top_k": 2.5}, "--top-k must be a whole number"),
        ({"top_p": [0.9]}, "--top-p must be a number"),
        ({"prefix": None}, "--prefix must be text"),
    ],
)
def test_sample_refuses_what_the_command_line_would_in_one_line(trained_run, options, says):
    from minigpt import load_checkpoint, sample
    from minigpt.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(says)):
        sample(load_checkpoint(trained_run[0]), **options)


WRONG = {
    "an int": lambda: 5,
    "None": lambda: None,
    "bytes": lambda: b"runs/a",
    "a list of ints": lambda: [1, 2],
    "a generator": lambda: (x for x in [1]),
    "a float": lambda: 2.5,
}


def test_every_public_function_refuses_arguments_of_the_wrong_type_in_one_line(trained_run, tmp_path):
    """Each public function, each of its required arguments in turn given something of the wrong type, raises
    minigpt's own error, never a builtin TypeError, AttributeError or IndexError from inside (58 §3, 59 §6)."""
    import inspect
    import warnings

    import minigpt
    from minigpt.errors import MiniGPTError

    run_dir, names_file = trained_run
    ckpt = minigpt.load_checkpoint(run_dir)
    right = {
        "model": ckpt.model,
        "tokenizer": ckpt.tokenizer,
        "names": ["anna"],
        "ckpt": ckpt,
        "checkpoint": ckpt,
        "config": minigpt.load_config("tiny"),
        "paths": [run_dir, run_dir],
        "ids": [ckpt.tokenizer.bos],
        "path": run_dir,
        "run_dir": run_dir,
        "spec_path": tmp_path / "no.toml",
        "out_dir": tmp_path / "out",
        "name": "anna",
        "num": 2,
        "run_or_checkpoint": run_dir,
    }
    escaped = []
    for public in minigpt.__all__[1:]:
        function = getattr(minigpt, public)
        if inspect.isclass(function):
            continue
        required = [
            p.name
            for p in inspect.signature(function).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]
        for wrong_name, wrong in WRONG.items():
            for given in required:
                arguments = [wrong() if name == given else right[name] for name in required]
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        function(*arguments)
                except MiniGPTError as e:
                    assert "\n" not in str(e) and len(str(e)) < 400, (public, given, str(e))
                except Exception as e:  # noqa: BLE001 (what the test looks for)
                    escaped.append(f"{public}({given}={wrong_name}): {type(e).__name__}: {e}")
    assert escaped == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "build, says",
    [
        (lambda GPT, GPTConfig: GPT(None), "a GPT is built from a GPTConfig, got None"),
        (lambda GPT, GPTConfig: GPT({"n_layer": 2}), "a GPT is built from a GPTConfig, got dict"),
        (
            lambda GPT, GPTConfig: GPT(GPTConfig(n_layer=-1, vocab_size=5)),
            "model.n_layer must be a whole number from 1, got -1",
        ),
        (
            lambda GPT, GPTConfig: GPT(GPTConfig(n_layer=0, vocab_size=5)),
            "model.n_layer must be a whole number from 1, got 0",
        ),
        (
            lambda GPT, GPTConfig: GPT(GPTConfig(n_embd=2.5, vocab_size=5)),
            "model.n_embd must be a whole number from 1, got 2.5",
        ),
        (
            lambda GPT, GPTConfig: GPT(GPTConfig(n_head=3, n_embd=16, vocab_size=5)),
            r"model.n_embd \(16\) must be divisible by model.n_head \(3\)",
        ),
        (lambda GPT, GPTConfig: GPT(GPTConfig()), "model.vocab_size must be a whole number from 2, got 0"),
    ],
)
def test_a_model_of_an_impossible_shape_is_refused_before_it_is_built(build, says):
    """GPT(config) checks its config's shape up front (59 §6): no model with no layers, no failure at the
    first forward for heads that do not divide the width."""
    from minigpt import GPT, GPTConfig
    from minigpt.errors import UsageError

    with pytest.raises(UsageError, match=says):
        build(GPT, GPTConfig)


@pytest.mark.parametrize(
    "chars, says",
    [
        (None, "expected a list of characters, got None"),
        (5, "expected a list of characters, got int"),
        ("abc", 'got one str "abc": put it in a list'),
        (["a", "bc"], "expected distinct single characters"),
        (["a", "a"], "expected distinct single characters"),
        ([None], "expected distinct single characters"),
    ],
)
def test_a_tokenizer_takes_distinct_single_characters(chars, says):
    from minigpt import Tokenizer
    from minigpt.errors import UsageError

    with pytest.raises(UsageError, match=says):
        Tokenizer(chars)
    assert Tokenizer(iter(["b", "a"])).chars == ["b", "a"]  # an iterator is read once


def test_a_string_is_not_read_as_a_list_and_an_iterator_is_read_once(trained_run):
    from minigpt import compare, evaluate_names, load_checkpoint, load_config
    from minigpt.errors import UsageError

    ckpt = load_checkpoint(trained_run[0])
    with pytest.raises(UsageError, match='expected a list of paths, got one str "runs/a-s1"'):
        compare("runs/a-s1")
    with pytest.raises(UsageError, match='expected a list of strings, got one str "model.dropout=0.1"'):
        load_config("tiny", "model.dropout=0.1")
    assert load_config("tiny", ("model.dropout=0.1",)).model.dropout == 0.1
    from_list = evaluate_names(ckpt.model, ckpt.tokenizer, ["anna", "bob"])
    assert evaluate_names(ckpt.model, ckpt.tokenizer, (n for n in ["anna", "bob"])) == from_list
    with pytest.raises(UsageError, match="each name is a string, got None at position 0"):
        evaluate_names(ckpt.model, ckpt.tokenizer, [None])


def test_a_snapshot_index_and_a_count_of_predictions_are_whole_numbers_in_their_range(trained_run):
    """Snapshots.load_into and attention_report's top check their numbers up front (59 §6): no IndexError from a
    list, no RuntimeError from topk, and -1 is not quietly the last snapshot."""
    from minigpt import attention_report, load_checkpoint, read_snapshots
    from minigpt.errors import UsageError

    ckpt = load_checkpoint(trained_run[0])
    snapshots = read_snapshots(trained_run[0])
    last = len(snapshots.steps) - 1
    for index, says in [
        (last + 1, f"from 0 to {last}, got {last + 1}"),
        (-1, f"from 0 to {last}, got -1"),
        ("1", 'expected a whole number, got str "1"'),
        (True, "expected a whole number, got bool"),
    ]:
        with pytest.raises(UsageError, match=says):
            snapshots.load_into(ckpt.model, index)
    snapshots.load_into(ckpt.model, last)
    for top in (0, -1, 2.5, None):
        with pytest.raises(UsageError, match="attention_report's top"):
            attention_report(ckpt.model, ckpt.tokenizer, "anna", top=top)
    assert len(attention_report(ckpt.model, ckpt.tokenizer, "anna", top=1).predictions[0]) == 1


def test_the_errors_a_user_catches_are_importable_from_the_package():
    """The README promises minigpt's own errors; a user catches them from `minigpt`, not from an internal path."""
    import minigpt
    from minigpt import errors

    for name in ("MiniGPTError", "UsageError", "RunError", "Interrupted"):
        assert getattr(minigpt, name) is getattr(errors, name) and name in minigpt.__all__
    with pytest.raises(minigpt.UsageError):
        minigpt.load_config("no-such-recipe")


@pytest.mark.parametrize(
    "build, says",
    [
        (lambda: GPT(GPTConfig(dropout=2.0, vocab_size=5)), r"model.dropout must be in \[0, 1\), got 2.0"),
        (lambda: GPT(GPTConfig(init_std=float("nan"), vocab_size=5)), "model.init_std must be a finite number"),
        (lambda: GPT(GPTConfig(init_std=-1.0, vocab_size=5)), "model.init_std must be positive, got -1.0"),
        (lambda: GPT(GPTConfig(norm_eps=float("nan"), vocab_size=5)), "model.norm_eps must be a finite number"),
        (lambda: GPT(GPTConfig(activation="evil", vocab_size=5)), "model.activation must be one of relu, gelu"),
        (lambda: GPT(GPTConfig(causal="no", vocab_size=5)), "model.causal must be bool, got str 'no'"),
        (lambda: GPT(GPTConfig(n_layer=10**9, vocab_size=5)), "would have .* parameters; minigpt builds at most"),
        (lambda: GPT(GPTConfig(n_embd=2**20, n_head=1, vocab_size=5)), "parameters; minigpt builds at most"),
    ],
)
def test_a_model_is_checked_key_by_key_where_the_api_builds_it(build, says):
    """GPTConfig values a recipe file would refuse reached torch (a NaN model, a GELU for "evil", minutes of
    allocation for 10**9 layers); GPT() checks each key against its declaration, in the command line's words."""
    with pytest.raises(UsageError, match=says):
        build()


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("steps", True, "train.steps must be int, got bool True"),
        ("steps", 1.5, "train.steps must be int, got float 1.5"),
        ("auto_scale", "yes", "train.auto_scale must be bool, got str"),
    ],
)
def test_a_config_built_in_python_is_checked_for_its_types_before_training(key, value, says, tmp_path):
    """train(steps=True) trained one step and auto_scale="yes" was taken as true."""
    config = load_config("tiny")
    setattr(config.train, key, value)
    with pytest.raises(UsageError, match=says):
        train(config, out_dir=tmp_path / "run", quiet=True)


@pytest.mark.parametrize("ids", [[999], "abc", [-1], [True], [1.0]])
def test_decoding_an_id_outside_the_vocabulary_is_refused(ids):
    """decode([999]) raised IndexError, decode([-1]) gave the last character and decode([True]) the second."""
    from minigpt import Tokenizer

    with pytest.raises(UsageError, match="a token id is a whole number from 0 to 3"):
        Tokenizer(["a", "b", "c"]).decode(ids)


def test_the_last_of_the_hostile_api_calls_are_one_line_each(trained_run, tmp_path):
    """An unknown option, a model that is None, a storage or reporter of the wrong kind, a page saved as text or to
    no path, and more names than one list holds: minigpt's own one line each, before any work (83 §20)."""
    import minigpt
    from minigpt.errors import UsageError

    run_dir, _ = trained_run
    ckpt = minigpt.load_checkpoint(run_dir)
    page = minigpt.explore(run_dir, snapshots=False)
    calls = {
        "generate takes no option evil": lambda: minigpt.generate(ckpt.model, ckpt.tokenizer, 2, evil=1),
        "at most 10,000,000 names in one list": lambda: minigpt.sample(ckpt, num=10**12),
        "at most 10,000,000 names": lambda: minigpt.generate(ckpt.model, ckpt.tokenizer, 10**12),
        "load_into takes the model to set": lambda: minigpt.read_snapshots(run_dir).load_into(None, 0),
        "--storage must be a URL": lambda: minigpt.run_sweep(tmp_path / "no.toml", tmp_path / "s", storage=5),
        "say must be a function": lambda: minigpt.run_sweep(tmp_path / "no.toml", tmp_path / "s", say=None),
        "expected a path": lambda: page.save(None),
        "would hold an HTML page in a .txt file": lambda: page.save(tmp_path / "x.txt"),
    }
    for says, call in calls.items():
        with pytest.raises(UsageError, match=re.escape(says)):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_model_reads_only_token_ids_it_has_and_the_tokenizer_it_was_trained_with(trained_run, tmp_path):
    """GPT.forward on floats, ids past the vocabulary or too many positions; generate and attention_report with
    another model's tokenizer; train's paths and load_config's base of the wrong kind: one line each (83 §20)."""
    import torch

    import minigpt
    from minigpt.errors import UsageError

    ckpt = minigpt.load_checkpoint(trained_run[0])
    model, vocab, block = ckpt.model, ckpt.model.config.vocab_size, ckpt.model.config.block_size
    other = minigpt.Tokenizer(list("xyz"))
    calls = {
        "a GPT reads token ids": lambda: model(torch.tensor([[1.5]])),
        f"from 0 to {vocab - 1}, got {vocab}": lambda: model(torch.tensor([[vocab]])),
        f"from 0 to {vocab - 1}, got -1": lambda: model(torch.tensor([[-1]])),
        f"at most {block} positions": lambda: model(torch.zeros(1, block + 1, dtype=torch.long)),
        "give the model its own tokenizer": lambda: minigpt.generate(model, other, 2),
        "its own tokenizer": lambda: minigpt.attention_report(model, other, "xy"),
        "out_dir: expected a path": lambda: minigpt.train(minigpt.load_config("tiny"), out_dir=5, quiet=True),
        "load_config's base is a Config": lambda: minigpt.load_config("tiny", base=5),
    }
    for says, call in calls.items():
        with pytest.raises(UsageError, match=re.escape(says)):
            call()


def test_a_microgpt_file_whose_weights_hold_true_or_false_is_refused(trained_run, tmp_path):
    import json

    from minigpt.formats.microgpt_json import import_microgpt

    document = {
        "format": "microgpt",
        "hyperparameters": {"n_layer": 1, "n_embd": 4, "n_head": 2, "block_size": 4, "vocab_size": 3},
        "uchars": ["a", "b"],
        "bos": 2,
    }
    h = document["hyperparameters"]
    shapes = {
        "wte": [3, 4],
        "wpe": [4, 4],
        "lm_head": [3, 4],
        "layer0.attn_wq": [4, 4],
        "layer0.attn_wk": [4, 4],
        "layer0.attn_wv": [4, 4],
        "layer0.attn_wo": [4, 4],
        "layer0.mlp_fc1": [16, 4],
        "layer0.mlp_fc2": [4, 16],
    }
    assert h["n_embd"] == 4
    document["state_dict"] = {key: [[0.5] * cols for _ in range(rows)] for key, (rows, cols) in shapes.items()}
    (tmp_path / "fine.json").write_text(json.dumps(document))
    import_microgpt(tmp_path / "fine.json", tmp_path / "fine.pt")  # the document itself is whole
    document["state_dict"]["wte"][0][0] = True
    (tmp_path / "odd.json").write_text(json.dumps(document))
    with pytest.raises(UsageError, match="wte is not a table of numbers"):
        import_microgpt(tmp_path / "odd.json", tmp_path / "odd.pt")
    assert not (tmp_path / "odd.pt").exists()
