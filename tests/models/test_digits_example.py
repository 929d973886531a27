"""The digits example ships its trained model (examples/digits/model.pt2) and the indices of its split
(split.npz), so a build copies them instead of training: the data read without scikit-learn equals
scikit-learn's load_digits, the shipped split is train_test_split's, the shipped model is what the
README quotes (97.8 % float test accuracy), and --retrain still trains."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "digits"))
import train  # noqa: E402  (examples/digits/train.py)


def test_csv_reader_equals_load_digits():
    from sklearn.datasets import load_digits

    x, y = train.load_digits_csv()
    d = load_digits()
    assert x.dtype == np.float32 and x.shape == (1797, 1, 8, 8)
    np.testing.assert_array_equal(x, (d.images.astype(np.float32) / 16.0)[:, None])
    np.testing.assert_array_equal(y, d.target)


def test_shipped_split_is_train_test_split():
    train_idx, test_idx = train.split_indices(train.load_digits_csv()[1])
    with np.load(train.SPLIT) as f:
        np.testing.assert_array_equal(f["train"], train_idx)
        np.testing.assert_array_equal(f["test"], test_idx)
    assert len(test_idx) == 360 and len(set(train_idx) | set(test_idx)) == 1797


def test_build_step_copies_the_shipped_model(tmp_path):
    import torch

    r = subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(tmp_path)],
                       capture_output=True, text=True, check=True)
    assert "shipped trained model" in r.stdout
    assert (tmp_path / "model.pt2").read_bytes() == train.SHIPPED_MODEL.read_bytes()
    test = np.load(tmp_path / "test.npz")
    m = torch.export.load(str(tmp_path / "model.pt2")).module()
    with torch.no_grad():
        pred = np.array([int(m(torch.from_numpy(x[None])).argmax()) for x in test["x"]])
    assert int((pred == test["y"]).sum()) == 352  # 0.9778 of 360, the README's float accuracy
    assert np.load(tmp_path / "calib.npz")["x"].shape == (1437, 1, 8, 8)


@pytest.mark.parametrize("epochs", [1])
def test_retrain_trains(tmp_path, epochs):
    import torch

    r = subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(tmp_path),
                        "--retrain", "--epochs", str(epochs)], capture_output=True, text=True, check=True)
    assert "float test accuracy" in r.stdout
    got = torch.export.load(str(tmp_path / "model.pt2")).state_dict
    shipped = torch.export.load(str(train.SHIPPED_MODEL)).state_dict
    assert set(got) == set(shipped) and not all(torch.equal(got[k], shipped[k]) for k in got)


@pytest.mark.parametrize("args, words", [(["--epochs", "2"], "go with --retrain"), (["--save"], "go with --retrain"),
                                         (["--retrain", "--epochs", "0"], "at least 1 epoch")])
def test_options_that_would_do_something_else_than_asked_are_refused_in_one_line(tmp_path, args, words):
    r = subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(tmp_path), *args],
                       capture_output=True, text=True)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "model.pt2").exists()
