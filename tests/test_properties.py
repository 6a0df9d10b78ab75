"""Generated inputs fed to the real commands: each ends in success or one line of error, never a traceback.

The suite runs a few hundred examples (the "ci" profile in conftest.py). For many more:
    HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_properties.py
"""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.config import Config
from minigpt.runs.run import TrainResult

runner = CliRunner()

KEYS = [
    f"{section}.{f.name}"
    for section in ("model", "train", "sample")
    for f in dataclasses.fields(getattr(Config(), section))
]
LINE_ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
NAME = st.text(min_size=0, max_size=30)


@st.composite
def names_files(draw) -> bytes:
    """Raw bytes, or text in any Unicode with a byte-order mark, mixed line endings and blank lines."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    lines = draw(st.lists(st.one_of(NAME, st.just(""), st.just("  ")), max_size=40))
    text = "".join(line + draw(LINE_ENDINGS) for line in lines)
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + text).encode("utf-8", errors="surrogatepass")


def assert_clean_ending(result):
    """Exit 0, or a non-zero exit with exactly one line on stderr naming the error."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code != 0:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("minigpt: error:"), result.stderr
        assert "Traceback" not in result.output


@settings(max_examples=settings.default.max_examples * 2 // 5)  # each example trains: 40 of the "ci" profile's 100
@given(content=names_files())
def test_train_on_any_names_file(tmp_path_factory, content):
    tmp = tmp_path_factory.mktemp("names")
    (tmp / "names.txt").write_bytes(content)
    result = runner.invoke(
        app,
        [
            "train",
            "-c",
            "tiny",
            "--data",
            str(tmp / "names.txt"),
            "--out",
            str(tmp / "run"),
            "--steps",
            "2",
            "--set",
            "train.eval_interval=1",
        ],
    )
    assert_clean_ending(result)


@given(content=names_files())
def test_eval_on_any_names_file(trained_run, tmp_path_factory, content):
    tmp = tmp_path_factory.mktemp("names")
    (tmp / "names.txt").write_bytes(content)
    assert_clean_ending(runner.invoke(app, ["eval", str(trained_run[0]), "--data", str(tmp / "names.txt")]))


@given(
    overrides=st.lists(
        st.one_of(
            st.builds(
                lambda key, value: f"{key}={value}",
                st.sampled_from(KEYS),
                st.one_of(
                    st.text(max_size=12),
                    st.integers().map(str),
                    st.floats().map(str),
                    st.sampled_from(["true", "false", "nan", "inf", "-inf", '"relu"', "[1, 2]", "{a = 1}"]),
                ),
            ),
            st.text(max_size=30),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_set_overrides(overrides):
    """Whatever --set says, the command parses and validates it, then trains (stubbed) or refuses in one line."""

    def stub_train(config, *args, **kwargs):
        return TrainResult(
            run_dir=None, steps=0, seconds=0.0, tokens=0, train_loss=None, val_loss=None, best_val_loss=None
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("minigpt.runs.run.train", stub_train)
        result = runner.invoke(app, ["train", "--quiet", *[arg for item in overrides for arg in ("--set", item)]])
    assert_clean_ending(result)
