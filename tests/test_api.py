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
