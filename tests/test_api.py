import subprocess
import sys


def test_public_names_are_the_functions_even_after_the_cli_imported_everything():
    import minigpt
    import minigpt.cli.main  # noqa: F401
    import minigpt.sampling  # noqa: F401
    import minigpt.training  # noqa: F401
    from minigpt import GPT, GPTConfig, Tokenizer, load_checkpoint, sample, train

    assert all(callable(f) for f in (GPT, GPTConfig, Tokenizer, load_checkpoint, sample, train))
    assert train.__module__ == "minigpt.runs.run" and sample.__module__ == "minigpt.sampling"
    assert minigpt.__version__


def test_importing_the_cli_does_not_import_torch():
    code = "import sys, minigpt.cli.main; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_python_api_checks_what_it_is_handed_as_the_command_line_does(trained_run, tmp_path):
    """minigpt's own errors, in one line, for what a notebook might hand it: a Config past its ranges, a path
    where a loaded checkpoint belongs, a names file where a list of names belongs."""
    import pytest

    from minigpt import (Config, evaluate_names, explore, load_checkpoint, load_config, logit_lens, sample, train)
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
