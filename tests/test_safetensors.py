"""safetensors export and import: the layout Hugging Face tools read, and a bit-identical round trip."""

import json

import pytest
import torch
from conftest import hide_package
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.formats.safetensors_files import export_safetensors, import_safetensors
from minigpt.model import microgpt_weights

st = pytest.importorskip("safetensors.torch")
runner = CliRunner()


def test_round_trip_is_bit_identical_and_keeps_the_recipe(trained_run, tmp_path):
    run_dir, _ = trained_run
    result = runner.invoke(app, ["export", str(run_dir), str(tmp_path / "hf"), "--format", "safetensors"])
    assert result.exit_code == 0, result.output
    original = load_checkpoint(run_dir)
    tensors = st.load_file(str(tmp_path / "hf" / "model.safetensors"))
    assert sorted(tensors) == sorted(microgpt_weights(original.model))  # microgpt's names, nothing else
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["vocab"] == original.tokenizer.chars and config["bos_token_id"] == original.tokenizer.bos
    assert config["n_layer"] == original.config.model.n_layer

    result = runner.invoke(app, ["import", str(tmp_path / "hf"), str(tmp_path / "back.pt")])
    assert result.exit_code == 0, result.output
    back = load_checkpoint(tmp_path / "back.pt")
    for key, tensor in original.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[key], tensor), key
    assert back.config == original.config and back.tokenizer.chars == original.tokenizer.chars
    export_safetensors(tmp_path / "back.pt", tmp_path / "again")
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (
        tmp_path / "hf" / "model.safetensors"
    ).read_bytes()


def test_import_refuses_non_finite_and_misfitting_weights(trained_run, tmp_path):
    export_safetensors(trained_run[0], tmp_path / "hf")
    weights = tmp_path / "hf" / "model.safetensors"
    tensors = st.load_file(str(weights))
    tensors["wte"][2, 3] = float("inf")
    st.save_file(tensors, str(weights))
    with pytest.raises(UsageError, match="weight wte holds 1 non-finite value"):
        import_safetensors(tmp_path / "hf", tmp_path / "out.pt")
    tensors["wte"] = torch.zeros(tensors["wte"].size(0), 8)
    st.save_file(tensors, str(weights))
    with pytest.raises(UsageError, match="do not fit .*config.json: size mismatch for wte"):
        import_safetensors(weights, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


def test_export_refuses_a_non_empty_directory_and_import_a_missing_config(trained_run, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["export", str(trained_run[0]), str(tmp_path / "full"), "--format", "safetensors"])
    assert result.exit_code == 2 and "is not empty; pass --overwrite" in result.stderr
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    result = runner.invoke(app, ["import", str(tmp_path / "full"), str(tmp_path / "x.pt")])
    assert result.exit_code == 2 and "model.safetensors not found" in result.stderr


def test_without_the_package_export_and_import_work_all_the_same(trained_run, tmp_path, monkeypatch):
    """After a plain install (no safetensors, no numpy) a model exports and imports: the format is written and
    read by minigpt (it said "the safetensors format needs the safetensors package")."""
    hide_package(monkeypatch, "safetensors")
    hide_package(monkeypatch, "numpy")
    result = runner.invoke(app, ["export", str(trained_run[0]), str(tmp_path / "hf"), "--format", "safetensors"])
    assert result.exit_code == 0, result.output
    back = runner.invoke(app, ["import", str(tmp_path / "hf"), str(tmp_path / "back.pt")])
    assert back.exit_code == 0, back.output
    original, again = load_checkpoint(trained_run[0]), load_checkpoint(tmp_path / "back.pt")
    assert all(torch.equal(again.model.state_dict()[k], t) for k, t in original.model.state_dict().items())


def test_minigpts_safetensors_are_the_packages(tmp_path):
    """What minigpt writes the safetensors package reads, byte for byte the package's own file, and the other
    way round; a damaged file is one line."""
    from minigpt.formats.safetensors_files import read_safetensors, safetensors_bytes

    tensors = {
        "wte": torch.randn(5, 3),
        "layer0.attn_wq": torch.randn(3, 3),
        "empty": torch.zeros(0, 4),
        "half": torch.randn(2, 2).to(torch.bfloat16),
    }
    ours = safetensors_bytes(tensors, {"format": "pt"})
    assert ours == st.save(tensors, metadata={"format": "pt"})
    theirs = st.load(ours)
    assert theirs.keys() == tensors.keys() and all(torch.equal(theirs[k], tensors[k]) for k in tensors)
    read = read_safetensors(st.save(tensors), "x.safetensors")
    assert all(torch.equal(read[k], tensors[k]) for k in tensors)
    for damaged in (ours[:5], ours[:-4], b"\xff" * 8 + ours[8:], ours[:8] + b"x" + ours[9:]):
        with pytest.raises(UsageError, match=r"^x.safetensors: cannot be read as safetensors: "):
            read_safetensors(damaged, "x.safetensors")


def test_a_failed_export_leaves_nothing_and_a_written_one_is_an_ordinary_file(trained_run, tmp_path, monkeypatch):
    import os

    def full_disk(fd):  # the first export's first file cannot be made whole
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full_disk)
        result = runner.invoke(app, ["export", str(trained_run[0]), str(tmp_path / "hf"), "--format", "safetensors"])
    assert result.exit_code != 0 and not (tmp_path / "hf").exists()
    mask = os.umask(0o022)
    try:
        export_safetensors(trained_run[0], tmp_path / "ok")
    finally:
        os.umask(mask)
    assert {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "ok").iterdir()} == {
        "model.safetensors": 0o644,
        "config.json": 0o644,
    }


def test_an_imported_checkpoint_does_not_call_its_names_new(trained_run, tmp_path):
    run_dir, data = trained_run
    runner.invoke(app, ["export", str(run_dir), str(tmp_path / "hf"), "--format", "safetensors"])
    runner.invoke(app, ["import", str(tmp_path / "hf"), str(tmp_path / "back.pt")])
    imported = str(tmp_path / "back.pt")
    plain = runner.invoke(app, ["sample", imported, "-n", "5", "--seed", "1", "--mark"])
    assert plain.exit_code == 0 and "not in the training data" not in plain.stderr
    assert "does not carry its training names, so whether these are new is unknown" in plain.stderr
    assert "*" not in plain.stdout
    as_json = json.loads(runner.invoke(app, ["sample", imported, "-n", "3", "--json"]).stdout)
    assert [entry["in_training_data"] for entry in as_json["names"]] == [None, None, None]
    refused = runner.invoke(app, ["sample", imported, "--new-only"])
    assert refused.exit_code == 2 and "give the names it was trained on (minigpt sample --data FILE)" in refused.stderr
    checked = runner.invoke(app, ["sample", imported, "-n", "40", "--seed", "2", "--data", str(data), "--json"])
    flags = [entry["in_training_data"] for entry in json.loads(checked.stdout)["names"]]
    original = json.loads(runner.invoke(app, ["sample", str(run_dir), "-n", "40", "--seed", "2", "--json"]).stdout)
    assert flags == [entry["in_training_data"] for entry in original["names"]] and True in flags
    new_only = runner.invoke(app, ["sample", imported, "-n", "5", "--new-only", "--data", str(data)])
    names = set(data.read_text().split())
    assert new_only.exit_code == 0 and not set(new_only.stdout.split()) & names


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_an_export_replaced_stays_whole_until_the_new_one_is(trained_run, tmp_path, monkeypatch, failure):
    import os

    out = tmp_path / "hf"
    export_safetensors(trained_run[0], out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls = []

    def fails_on_the_second_file(fd):  # the weights are written, then the disk fills (or Ctrl-C) on the config
        calls.append(fd)
        if len(calls) == 2:
            raise failure

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fails_on_the_second_file)
        result = runner.invoke(app, ["export", str(trained_run[0]), str(out), "--format", "safetensors", "--overwrite"])
    assert result.exit_code != 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old export, whole; no temporary left


def test_a_plain_export_works_on_every_model(tmp_path):
    """The default recipe's model has a final norm microgpt lacks: a plain export of it to a .json name wrote a
    safetensors folder of another name (a newcomer looked for mine.json); it is refused, naming the folder
    export that holds it, and nothing is written; an explicit --format microgpt refuses too."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    default_like = train(tiny_config("train.steps=2", "model.final_norm=true"), out_dir=tmp_path / "run", quiet=True)
    result = runner.invoke(app, ["export", str(default_like.run_dir), str(tmp_path / "names.json")])
    assert result.exit_code == 2 and "export it as safetensors into a folder, minigpt export" in result.stderr
    assert str(tmp_path / "names") in result.stderr and list(tmp_path.glob("names*")) == []
    folder = runner.invoke(app, ["export", str(default_like.run_dir), str(tmp_path / "names")])
    assert folder.exit_code == 0
    assert sorted(p.name for p in (tmp_path / "names").iterdir()) == ["config.json", "model.safetensors"]
    refused = runner.invoke(
        app, ["export", str(default_like.run_dir), str(tmp_path / "x.json"), "--format", "microgpt"]
    )
    assert refused.exit_code == 2 and "microgpt cannot run this architecture" in refused.stderr
    from minigpt.formats.recipes import load_config

    microgpt = train(load_config("microgpt", ["train.steps=2"]), out_dir=tmp_path / "mg", quiet=True)
    plain = runner.invoke(app, ["export", str(microgpt.run_dir), str(tmp_path / "mg.json")])  # microgpt's own shape
    assert plain.exit_code == 0 and json.loads((tmp_path / "mg.json").read_text())["format"] == "microgpt"


@pytest.mark.parametrize("dtype", [["F32"], {"F32": 1}, 32, None])
def test_a_header_whose_dtype_is_no_name_is_one_line(dtype):
    """A list or an object where the dtype's name belongs is damage like any other (a list was Python's
    "unhashable type" before)."""
    from minigpt.formats.safetensors_files import read_safetensors

    header = json.dumps({"w": {"dtype": dtype, "shape": [1], "data_offsets": [0, 4]}}).encode()
    header += b" " * (-len(header) % 8)
    with pytest.raises(UsageError, match="cannot be read as safetensors: tensor 'w': a dtype of F64"):
        read_safetensors(len(header).to_bytes(8, "little") + header + bytes(4), "w.safetensors")
