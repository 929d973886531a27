"""examples/mlperf_tiny/fetch.py: the MLPerf Tiny .tflite files downloaded from the MLCommons repository
(pinned commit, SHA-256 checked) into a cache -- tested offline with a file:// "repository" and fake
openers; and where source_files() looks (TABULA_MLPERF_TINY, ../shared, else the cache + shipped inputs)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import urllib.error

import numpy as np
import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "examples"))
import mlperf_tiny  # noqa: E402
from mlperf_tiny import fetch  # noqa: E402


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A local stand-in of the repository: every file of FILES with made-up bytes (their own checksums)."""
    files = {}
    for name, f in fetch.FILES.items():
        data = hashlib.sha256(name.encode()).digest() * 8
        p = tmp_path / "repo" / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        files[name] = fetch.RemoteFile(f.path, hashlib.sha256(data).hexdigest(), len(data))
    monkeypatch.setattr(fetch, "FILES", files)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return (tmp_path / "repo").as_uri() + "/"


def test_the_pinned_files_are_the_ones_measured():
    """FILES' checksums are those of the copies in ../shared/mlperf_tiny (where this machine has them)."""
    assert len(fetch.COMMIT) == 40 and fetch.COMMIT in fetch.BASE_URL
    d = mlperf_tiny.data_dir()
    if d is None:
        pytest.skip("no local copy of the MLPerf Tiny files to compare with")
    for name in fetch.FILES:
        if (d / name).is_file():
            assert fetch.verified(d / name, name), name


def test_download_into_the_cache_once_and_verified(repo, tmp_path):
    got = fetch.fetch("ad01_fp32.tflite", base_url=repo)
    assert got == tmp_path / "cache" / "tabula" / "mlperf_tiny" / "ad01_fp32.tflite" and fetch.verified(got, "ad01_fp32.tflite")

    def no_network(*a, **k):
        raise AssertionError("a verified file is not downloaded again")

    assert fetch.fetch("ad01_fp32.tflite", base_url=repo, opener=no_network) == got


def test_a_wrong_checksum_keeps_nothing_and_no_network_is_one_line(repo, tmp_path):
    (tmp_path / "repo" / fetch.FILES["kws_ref_model.tflite"].path).write_bytes(b"tampered")
    with pytest.raises(fetch.FetchError, match=r"kws_ref_model\.tflite from file://.* is not the expected file "
                                               r"\(8 bytes.*nothing was kept"):
        fetch.fetch("kws_ref_model.tflite", base_url=repo)
    assert not list((tmp_path / "cache" / "tabula" / "mlperf_tiny").glob("kws_ref_model*"))

    def offline(url, timeout):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    with pytest.raises(fetch.FetchError) as e:
        fetch.fetch("pretrainedResnet.tflite", opener=offline)
    msg = str(e.value)
    assert "\n" not in msg and fetch.BASE_URL in msg and "name resolution" in msg and "TABULA_MLPERF_TINY" in msg


def test_source_files_without_a_local_copy_download_and_use_the_shipped_inputs(repo, monkeypatch, tmp_path):
    monkeypatch.delenv("TABULA_MLPERF_TINY", raising=False)
    monkeypatch.setattr(mlperf_tiny, "ROOT", tmp_path / "checkout")  # no ../shared beside it
    monkeypatch.setattr(fetch, "BASE_URL", repo)
    files = mlperf_tiny.source_files("kws")
    assert [f.name for f in files] == ["kws_ref_model_float32.tflite", "kws_ref_model.tflite", "kws_inputs.npz"]
    assert files[0].parent == tmp_path / "cache" / "tabula" / "mlperf_tiny"
    assert files[2].parent == mlperf_tiny.SHIPPED_INPUTS
    with np.load(files[2]) as z:
        assert z["x"].shape == (15, 49, 10, 1) and z["y_float"].shape == (15, 12)
    monkeypatch.setenv("TABULA_MLPERF_TINY", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="TABULA_MLPERF_TINY=.*nowhere is not a folder"):
        mlperf_tiny.source_files("kws")


def test_the_shipped_inputs_are_the_measured_ones():
    d = mlperf_tiny.data_dir()
    for spec in mlperf_tiny.SPECS.values():
        with np.load(mlperf_tiny.SHIPPED_INPUTS / spec.inputs) as z:
            assert {"x", "y_float"} <= set(z.files)
            if d is not None and (d / spec.inputs).is_file():
                with np.load(d / spec.inputs) as ref:
                    assert all(np.array_equal(z[k], ref[k]) for k in ref.files)


def test_the_command_line_is_one_line_on_failure(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "mlperf_tiny" / "fetch.py"), "--to", str(tmp_path),
                        "nosuch.tflite"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().startswith("tabula: error: unknown file 'nosuch.tflite'")
