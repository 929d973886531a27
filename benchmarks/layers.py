"""Instructions per MAC (or per element) of each layer kind, on three emulated cores, next to CMSIS-NN.

Each layer is one kernel call exactly as codegen emits it:
CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED int8 with the fused ``requant`` epilogue (int8 out; CONV2D
and FULLY_CONNECTED with the input zero point folded into the bias, codegen's ``fold_input_zp``),
DEPTHWISE_CONV2D a16w8 (int16 in, int48 accumulators requantized to int16, or to int8 at an s16_s8
precision boundary) next to int8 on the 3x3 layers of MobileNetV1-0.25 at 96x96,
AVG_POOL2D and MAX_POOL2D int8, ADD int8 (the IR's RESCALE of each input, ADD, RESCALE, fused by codegen
into one ``tabula_add_requant_s8`` call), TABLE int8 and the fused int16 table op (TABLE16, one
513-entry table).  They run through tabula.harness.device on

* ``m55``: corstone300 (QEMU mps3-an547, Cortex-M55) with the Helium paths,
* ``m55-portable``: the same with ``TABULA_PORTABLE_ONLY=1``,
* ``m4``: mps2_an386 (QEMU mps2-an386, Cortex-M4),

with SysTick around the call under ``-icount shift=0`` (instructions exact to one tick: 31 on the M55,
40 on the M4).  Every output is checked bit for bit against the Python reference
(python/tabula/reference/ops/*.py, qmath.table16_apply); a mismatch stops the script.  The CMSIS-NN
columns are the figures of issue 11 (TFLite Micro + CMSIS-NN v7, -O2, same QEMU boards).

Usage: ``python benchmarks/layers.py [--targets m55,m55-portable,m4] [--seed N]`` (about 2 min per target).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402

from tabula import qmath, requant  # noqa: E402
from tabula.codegen.fusion import folded_bias  # noqa: E402
from tabula.reference.ops import add, avg_pool2d, clamp, conv2d, depthwise_conv2d, fully_connected  # noqa: E402
from tabula.harness.device import TARGETS, DeviceKernelLib  # noqa: E402
from tabula.reference.ops import max_pool2d, rescale, table  # noqa: E402

#: Issue 11: CMSIS-NN instructions per MAC, (M55 MVE, M4 DSP), same layers and QEMU boards.
CMSIS_NN = {"conv3x3": (0.334, 2.14), "conv1x1": (0.615, 2.70), "dwconv3x3": (2.33, 7.96), "fc": (0.522, 2.07)}
H = W = 16


def _requant(rng, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A requant block (per-channel multipliers in [2^30, 2^31), shifts that spread outputs over int8)
    and the int8 the IR's RESCALE + CLAMP give for ``acc``."""
    cout = acc.shape[-1]
    log2 = int(np.log2(np.abs(acc).max() + 1))
    m, s = rng.integers(2**30, 2**31, cout), rng.integers(log2 + 22, log2 + 24, cout)
    zp = -5
    block = requant.pack(zp, -128, 127, m, s)
    y = rescale.run([acc], {"input_zp": 0, "output_zp": zp, "multiplier": [int(v) for v in m], "shift": [int(v) for v in s],
                            "scale32": True, "output_dtype": "int8"}, strict=False)
    return block, clamp.run([y], {"min": -128, "max": 127})


def _i8(rng, shape):
    return rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)


def _w8(rng, shape):
    return rng.integers(-127, 127, shape, endpoint=True, dtype=np.int8)


def layers(rng):
    """``[(key, description, unit, count, calls)]``; ``calls(dev) -> [(output array, expected)]`` queues
    the layer's kernel calls on ``dev``."""
    out = []

    def conv(key, desc, cin, cout, k, pad, stride=1):
        x, w, b = _i8(rng, (1, H, W, cin)), _w8(rng, (cout, k, k, cin)), rng.integers(-5000, 5000, cout, dtype=np.int32)
        a = {"pad": list(pad), "stride": [stride] * 2, "dilation": [1, 1], "input_zp": -3, "weight_zp": 0}
        acc = conv2d.run([x, w, b], a)
        block, want = _requant(rng, acc)
        bf = folded_bias(w, b, -3)  # codegen's fold_input_zp: tabula_conv2d_s8_folded, pad_value = input_zp
        out.append((key, desc, "MAC", acc.size // cout * k * k * cin * cout, lambda dev: [(dev.conv2d_folded(
            x, w, bf, pad=a["pad"], stride=a["stride"], dilation=(1, 1), pad_value=-3, requant=block), want)]))

    conv("conv3x3", "conv 3x3 16->32 16x16 pad 1", 16, 32, 3, [1] * 4)
    conv("conv1x1", "conv 1x1 32->64 16x16", 32, 64, 1, [0] * 4)
    conv("conv_first", "first conv 3->8 3x3/2 16x16 pad 0,1", 3, 8, 3, [0, 1, 0, 1], 2)
    conv("conv_pw8", "pointwise 8->16 16x16", 8, 16, 1, [0] * 4)

    # a16w8 CONV2D (tabula_conv2d_s16, int16 in, requantized int16 out) at MobileNetV1-0.25 96x96's shapes,
    # each next to the int8 kernel codegen calls on the same layer (tabula_conv2d_s8_folded)
    def mobile(key, desc, hw, cin, cout, k, pad, stride=1):
        x, w = _i8(rng, (1, hw, hw, cin)), _w8(rng, (cout, k, k, cin))
        b = rng.integers(-5000, 5000, cout, dtype=np.int32)
        a = {"pad": list(pad), "stride": [stride] * 2, "dilation": [1, 1], "input_zp": -3, "weight_zp": 0}
        acc = conv2d.run([x, w, b], a)
        block, want = _requant(rng, acc)
        bf = folded_bias(w, b, -3)
        out.append((f"{key}_s8", f"{desc} int8", "MAC", acc.size // cout * k * k * cin * cout, lambda dev: [(
            dev.conv2d_folded(x, w, bf, pad=a["pad"], stride=a["stride"], dilation=(1, 1), pad_value=-3,
                              requant=block), want)]))
        x16 = rng.integers(-32768, 32767, (1, hw, hw, cin), endpoint=True, dtype=np.int16)
        b16 = rng.integers(-(2**20), 2**20, cout, dtype=np.int64)
        a16 = {**a, "input_zp": 0}
        acc16 = conv2d.run([x16, w, b16], a16)
        log2 = int(np.log2(np.abs(acc16).max() + 1))
        block16 = requant.pack(0, -32768, 32767, rng.integers(2**14, 2**15, cout), rng.integers(log2, log2 + 2, cout))
        want16 = requant.reference(acc16, block16, True)
        out.append((f"{key}_s16", f"{desc} a16w8", "MAC", acc16.size // cout * k * k * cin * cout, lambda dev: [(
            dev.conv2d(x16, w, b16, **a16, requant=block16),
            want16)]))

    mobile("mb_first", "mb first conv 1->8 3x3/2 96x96 pad 0,1", 96, 1, 8, 3, [0, 1, 0, 1], 2)
    mobile("mb_pw8", "mb pw 8->16 48x48", 48, 8, 16, 1, [0] * 4)
    mobile("mb_pw16", "mb pw 16->32 24x24", 24, 16, 32, 1, [0] * 4)
    mobile("mb_pw32", "mb pw 32->32 24x24", 24, 32, 32, 1, [0] * 4)
    mobile("mb_pw32_64", "mb pw 32->64 12x12", 12, 32, 64, 1, [0] * 4)
    mobile("mb_pw64", "mb pw 64->64 12x12", 12, 64, 64, 1, [0] * 4)
    mobile("mb_pw128", "mb pw 128->128 6x6", 6, 128, 128, 1, [0] * 4)
    mobile("mb_pw128_256", "mb pw 128->256 3x3", 3, 128, 256, 1, [0] * 4)
    mobile("mb_pw256", "mb pw 256->256 3x3", 3, 256, 256, 1, [0] * 4)

    def dw(key, desc, c, kh, kw, pad, hw=H, stride=1):
        x, w, b = _i8(rng, (1, hw, hw, c)), _w8(rng, (kh, kw, c, 1)), rng.integers(-5000, 5000, c, dtype=np.int32)
        a = {"pad": list(pad), "stride": [stride] * 2, "dilation": [1, 1], "input_zp": 7, "weight_zp": 0}
        acc = depthwise_conv2d.run([x, w, b], a)
        block, want = _requant(rng, acc)
        out.append((key, desc, "MAC", acc.size * kh * kw, lambda dev: [(dev.depthwise_conv2d(
            x, w, b, pad=a["pad"], stride=a["stride"], dilation=(1, 1), input_zp=7, weight_zp=0, requant=block),
            want)]))

    dw("dwconv3x3", "depthwise 3x3 x64 16x16 pad 1", 64, 3, 3, [1] * 4)
    dw("dwconv3x3_c8", "depthwise 3x3 x8 16x16 pad 1", 8, 3, 3, [1] * 4)
    dw("dwconv3x1_c40", "depthwise (3,1) x40 16x16 pad 1,1,0,0", 40, 3, 1, [1, 1, 0, 0])

    # a16w8 DEPTHWISE_CONV2D as codegen calls it (int16 in, int48 accumulators requantized in the epilogue:
    # apply_scale_16, multipliers < 2^15, int16 out -- or int8 out, the s16_s8 precision boundary), next to
    # int8 on the same shapes: the 3x3 pad 1 layers of MobileNetV1-0.25 at 96x96
    def dw16(key, desc, c, hw, stride, out_dtype="int16"):
        x = rng.integers(-32768, 32767, (1, hw, hw, c), endpoint=True, dtype=np.int16)
        w, b = _w8(rng, (3, 3, c, 1)), rng.integers(-(2**20), 2**20, c, dtype=np.int64)
        a = {"pad": [1] * 4, "stride": [stride] * 2, "dilation": [1, 1], "input_zp": 0, "weight_zp": 0}
        acc = depthwise_conv2d.run([x, w, b], a)
        log2, bits = int(np.log2(np.abs(acc).max() + 1)), 15 if out_dtype == "int16" else 7
        m, s = rng.integers(2**14, 2**15, c), log2 + 15 - bits - rng.integers(0, 2, c)
        block = requant.pack(0, -32768, 32767, m, s) if bits == 15 else requant.pack(-3, -128, 127, m, s)
        want = requant.reference(acc, block, True, out_dtype)
        out.append((key, desc, "MAC", acc.size * 9, lambda dev: [(dev.depthwise_conv2d(
            x, w, b, pad=a["pad"], stride=a["stride"], dilation=(1, 1), input_zp=0, weight_zp=0, requant=block,
            out_dtype=out_dtype), want)]))

    for hw, c, stride in ((48, 8, 1), (48, 16, 2), (24, 32, 1), (24, 32, 2), (12, 64, 1), (6, 128, 1), (3, 256, 1)):
        tag, shape = f"{hw}x{c}s{stride}", f"3x3/{stride} {hw}x{hw}x{c} pad 1"
        dw(f"dw8_{tag}", f"depthwise int8 {shape}", c, 3, 3, [1] * 4, hw, stride)
        dw16(f"dw16_{tag}", f"depthwise a16w8 {shape}", c, hw, stride)
    dw16("dw16_s8_24x32s1", "depthwise a16w8 -> int8 3x3/1 24x24x32 pad 1", 32, 24, 1, "int8")

    fx, fw, fb = _i8(rng, (1, 256)), _w8(rng, (128, 256)), rng.integers(-5000, 5000, 128, dtype=np.int32)
    fblock, fwant = _requant(rng, fully_connected.run([fx, fw, fb], {"input_zp": 1, "weight_zp": 0}))
    ffb = folded_bias(fw, fb, 1)  # codegen's fold_input_zp: the bias holds -input_zp * sum(w), input_zp 0
    out.append(("fc", "fully connected 256->128", "MAC", 256 * 128, lambda dev: [(dev.fully_connected(
        fx, fw, ffb, input_zp=0, weight_zp=0, requant=fblock), fwant)]))

    px = _i8(rng, (1, H, W, 32))
    pa = {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0], "input_zp": -4, "output_zp": 3}
    awant = avg_pool2d.run([px], pa)
    out.append(("avgpool", "avg pool 2x2/2 16x16x32", "out elem", awant.size, lambda dev: [(dev.avg_pool2d(
        px, kernel=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0), input_zp=-4, output_zp=3), awant)]))
    mwant = max_pool2d.run([px], {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0]})
    out.append(("maxpool", "max pool 2x2/2 16x16x32", "out elem", mwant.size, lambda dev: [(dev.max_pool2d(
        px, kernel=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0)), mwant)]))

    # ADD int8 as codegen calls it: the IR's RESCALE x2, ADD, RESCALE fused (tabula_add_requant_s8)
    ea, eb = _i8(rng, (1, 8, 8, 64)), _i8(rng, (1, 8, 8, 64))
    m = 1518500250
    params = [-2, m, 13, 6, m, 13, 0, 1, -128, 127, m, 48]   # terms within 2^28, as lowering bounds them
    up = {"output_zp": 0, "multiplier": [m], "shift": [13], "scale32": True, "output_dtype": "int32"}
    s = add.run([rescale.run([ea], {**up, "input_zp": -2}), rescale.run([eb], {**up, "input_zp": 6})], {})
    ey = rescale.run([s], {"input_zp": 0, "output_zp": 1, "multiplier": [m], "shift": [48], "scale32": True,
                           "output_dtype": "int8"})
    out.append(("add", "add int8 8x8x64 (fused ADD_REQUANT)", "elem", ea.size,
                lambda dev: [(dev.add_requant(ea, eb, params), ey)]))

    # RESCALE at a precision boundary of scheme=mixed, as kws (DS-CNN) has them: [1, 25, 5, 64] per channel
    def boundary(key, desc, din, dout, m_lo, m_hi, s_lo, s_hi, acc_mag, clamp=None):
        x = rng.integers(-acc_mag, acc_mag, (1, 25, 5, 64), endpoint=True).astype(din)
        ra = {"input_zp": 0, "output_zp": 0, "multiplier": rng.integers(m_lo, m_hi, 64).tolist(),
              "shift": rng.integers(s_lo, s_hi, 64, endpoint=True).tolist(), "scale32": din == "int32",
              "output_dtype": dout}
        want = rescale.run([x], ra)
        if clamp is not None:
            want = np.clip(want, *clamp).astype(want.dtype)
        out.append((key, desc, "elem", x.size, lambda dev: [(dev.rescale(
            x, input_zp=0, output_zp=0, multiplier=ra["multiplier"], shift=ra["shift"], output_dtype=dout,
            clamp=clamp), want)]))

    boundary("rescale48_8", "RESCALE int48->int8 per channel 25x5x64", "int64", "int8", 2**14, 2**15, 27, 29, 2**24)
    boundary("rescale32_16", "RESCALE+CLAMP int32->int16 per ch 25x5x64", "int32", "int16", 2**30, 2**31, 31, 32,
             2**20, (0, 32767))

    tx = _i8(rng, (1, 8, 8, 64))
    t8 = _i8(rng, 256)
    t8want = table.run([tx, t8], {})
    out.append(("table8", "TABLE int8 8x8x64", "elem", tx.size, lambda dev: [(dev.table(tx, t8), t8want)]))

    sx = rng.integers(-32768, 32767, (1, 8, 8, 64), endpoint=True, dtype=np.int16)
    t16 = np.round(np.tanh(np.linspace(-4, 4, 513)) * 32767).astype(np.int16)
    t16want = qmath.table16_apply(t16, sx)
    out.append(("table16", "TABLE int16 8x8x64 (fused TABLE16)", "elem", sx.size,
                lambda dev: [(dev.table16(sx, t16), t16want)]))
    return out


def measure(target: str, work: Path, rng_seed: int) -> dict:
    """``{key: instructions}`` of every layer on ``target``, each output checked bit for bit."""
    board, portable, noasm = TARGETS[target]
    dev = DeviceKernelLib(board, portable=portable, noasm=noasm, work_dir=work)
    plan = layers(np.random.default_rng(rng_seed))
    queued = []
    with dev.batch():
        for key, *_rest, calls in plan:
            pairs = []
            for got, want in calls(dev):
                pairs.append((got, want, dev.last))
            queued.append((key, pairs))
    result = {}
    for key, pairs in queued:
        for got, want, run in pairs:
            if got.dtype != want.dtype or not np.array_equal(got, want):
                raise SystemExit(f"{target} {key} ({run.name}): device output differs from the Python reference "
                                 f"({int(np.sum(got != want))} of {want.size} elements)")
        result[key] = sum(run.instructions for _, _, run in pairs)
    return result


def _commit() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %cs"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="m55,m55-portable,m4", help="comma-separated: " + ", ".join(TARGETS))
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    bad = [t for t in targets if t not in TARGETS]
    if bad:
        raise SystemExit(f"unknown target(s) {bad}: pick from {list(TARGETS)}")
    with tempfile.TemporaryDirectory(prefix="tabula-layers-") as tmp:
        counts = {t: measure(t, Path(tmp), args.seed) for t in targets}
    plan = layers(np.random.default_rng(args.seed))
    print(f"tabula layers: instructions per MAC (per element), QEMU -icount shift=0, commit {_commit()}")
    print("every output bit-exact with the Python reference; CMSIS-NN: issue 11 (TFLM + CMSIS-NN v7, -O2)")
    head = f"{'layer':44s} {'per':>8s} {'count':>10s}" + "".join(f" {t:>13s}" for t in targets)
    head += f" {'CMSIS-NN M55':>13s} {'CMSIS-NN M4':>12s}"
    print(head)
    print("-" * len(head))
    for key, desc, unit, count, _ in plan:
        row = f"{desc:44s} {unit:>8s} {count:>10,d}" + "".join(f" {counts[t][key] / count:>13.3f}" for t in targets)
        m55, m4 = CMSIS_NN.get(key, (None, None))
        row += f" {m55 if m55 is not None else '-':>13}" + f" {m4 if m4 is not None else '-':>12}"
        print(row)
    print("instructions per call:", "; ".join(
        f"{t}: " + ", ".join(f"{k} {v:,}" for k, v in counts[t].items()) for t in targets))


if __name__ == "__main__":
    main()
