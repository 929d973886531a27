"""Download the MLPerf Tiny reference models (the float and int8 ``.tflite`` files) into a cache.

    python examples/mlperf_tiny/fetch.py            # every file -> ~/.cache/tabula/mlperf_tiny
    python examples/mlperf_tiny/fetch.py --to DIR   # or into DIR (then TABULA_MLPERF_TINY=DIR)

The files come from the MLCommons ``tiny`` repository (Apache-2.0), pinned to commit :data:`COMMIT`, and
each is checked against its SHA-256 (:data:`FILES`: the checksums of the copies these models were
measured with) before it is kept; a partial or damaged download never stays in the cache.  The
evaluation inputs (``kws_inputs.npz``, ``ic_inputs.npz``, ``ad_inputs.npz``) are not in that repository:
this project made them (see ``inputs/README.md``) and ships them in ``examples/mlperf_tiny/inputs/``.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: The commit of github.com/mlcommons/tiny the files are taken from (its v1.4 "final report" commit).
COMMIT = "1afd2c9820f795965a6134facd0b4dfae41ef23f"
#: Where the files are, at that commit.
BASE_URL = f"https://raw.githubusercontent.com/mlcommons/tiny/{COMMIT}/benchmark/training/"


@dataclass(frozen=True)
class RemoteFile:
    """One downloadable file: its path under :data:`BASE_URL`, SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int


FILES: dict[str, RemoteFile] = {
    "kws_ref_model_float32.tflite": RemoteFile(
        "keyword_spotting/trained_models/kws_ref_model_float32.tflite",
        "e5004c6f1012246e33fa068d8488325538e0444073cd361f5a7edb40c73f12d2", 43392),
    "kws_ref_model.tflite": RemoteFile(
        "keyword_spotting/trained_models/kws_ref_model.tflite",
        "aeea436800704fce17b17292e4412630ad856e9d777c044c64ef748a880bd0ae", 53936),
    "pretrainedResnet.tflite": RemoteFile(
        "image_classification/trained_models/pretrainedResnet.tflite",
        "b5c0046d6e0328b4956afd6baa29555a29b1f1c65bdd45aaed75b7cd484d9f79", 318144),
    "pretrainedResnet_quant.tflite": RemoteFile(
        "image_classification/trained_models/pretrainedResnet_quant.tflite",
        "3c002613d1b2475eb51dd78dfb85a546c8ae658dee71cf6ade43b022fe205415", 98496),
    "ad01_fp32.tflite": RemoteFile(
        "anomaly_detection/trained_models/ad01_fp32.tflite",
        "c66636f4d7f8af8b10518e7be750a22c9d8d46ec97326b40b0d94c097e0aad9b", 1067648),
    "ad01_int8.tflite": RemoteFile(
        "anomaly_detection/trained_models/ad01_int8.tflite",
        "87cf24194ef93d1d9b11a591d805526b98008e351655d29883c825c9c106ba24", 276976),
}


class FetchError(FileNotFoundError):
    """A file could not be downloaded or failed its checksum (the message names it and the fix): the
    file is not available, so a FileNotFoundError, which callers that look for the files already catch."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tabula/mlperf_tiny``, else ``~/.cache/tabula/mlperf_tiny``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tabula" / "mlperf_tiny"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified(path: Path, name: str) -> bool:
    """Whether ``path`` holds file ``name`` (:data:`FILES`) byte for byte (size, then SHA-256)."""
    f = FILES[name]
    return path.is_file() and path.stat().st_size == f.size and sha256_of(path) == f.sha256


def fetch(name: str, dest: Path | None = None, base_url: str | None = None,
          opener: Callable = urllib.request.urlopen, timeout_s: float = 60.0) -> Path:
    """File ``name`` of :data:`FILES` in ``dest`` (default :func:`cache_dir`), downloaded from
    ``base_url`` (default :data:`BASE_URL`; any URL ``opener`` opens: ``file://`` works offline) when it
    is not there already.

    The download goes to ``<name>.part`` and is renamed only after its size and SHA-256 match.

    Raises:
        KeyError: an unknown ``name``.
        FetchError: no network / the server refused (the URL and the reason, and where to put the
            file instead), or the bytes are not the expected file (checksum mismatch: nothing is kept).
    """
    f = FILES[name]
    dest = Path(dest) if dest is not None else cache_dir()
    target = dest / name
    if verified(target, name):
        return target
    url = (base_url or BASE_URL) + f.path
    where = (f"download it by hand into {dest} (or set TABULA_MLPERF_TINY to a folder that holds the MLPerf "
             "Tiny files)")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FetchError(f"cannot create {dest} ({e.strerror or e}); set XDG_CACHE_HOME or TABULA_MLPERF_TINY") from None
    part = dest / (name + ".part")
    try:
        with opener(url, timeout=timeout_s) as r, open(part, "wb") as out:
            while True:
                block = r.read(1 << 16)
                if not block:
                    break
                out.write(block)
    except (urllib.error.URLError, OSError, ValueError) as e:
        part.unlink(missing_ok=True)
        reason = getattr(e, "reason", None) or e
        raise FetchError(f"cannot download {name} from {url} ({type(e).__name__}: {reason}); {where}") from None
    size, digest = part.stat().st_size, sha256_of(part)
    if size != f.size or digest != f.sha256:
        part.unlink(missing_ok=True)
        raise FetchError(f"{name} from {url} is not the expected file ({size} bytes, SHA-256 {digest[:16]}..., "
                         f"expected {f.size} bytes, {f.sha256[:16]}...); nothing was kept: {where}")
    part.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--to", default=None, help=f"folder (default: {cache_dir()})")
    ap.add_argument("names", nargs="*", help=f"files (default: all: {', '.join(FILES)})")
    a = ap.parse_args(argv)
    try:
        for name in a.names or FILES:
            if name not in FILES:
                raise FetchError(f"unknown file {name!r}; the files are {', '.join(FILES)}")
            print(f"{fetch(name, Path(a.to) if a.to else None)}  ok (SHA-256 {FILES[name].sha256[:16]}...)")
    except FetchError as e:
        print(f"tabula: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
