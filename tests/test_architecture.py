"""The architecture keeps one source per fact: every IR op is one spec (contract, reference, MAC count,
accumulator bound, TOSA mapping) with a codegen entry, a kernel and a test; the package imports by stage
name without cycles; the lowering needs no torchao."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tabula import ir
from tabula.codegen import OP_EMITTERS
from tabula.reference.ops import specs

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "tabula"


#: The facts every IR op's spec module declares (python/tabula/reference/ops/__init__.py), each with
#: what a missing one is called in the failure.
SPEC_FACTS = {"contract": "contract", "run": "reference run", "macs": "MAC count", "tosa": "TOSA mapping"}


def op_fact_problems(spec_map: dict, emitters: dict, kernel_names: set,
                     tests_dirs: tuple[Path, ...] = (ROOT / "tests" / "ops",)) -> list[str]:
    """Every missing fact of every IR op, one line each naming the op and the fact: its spec's contract,
    reference run, MAC count, accumulator bound (a function, or ``bound = None`` declared), TOSA mapping and
    reader (``from_tosa``, or ``from_tosa = None`` with a ``fold_tosa``);
    a codegen entry named like the spec; kernels in the manifest; ``test_<op>.py`` in ``tests_dirs``."""
    problems = []
    for name, spec in sorted(spec_map.items()):
        stem = spec.__name__.rsplit(".", 1)[1]
        for attr, fact in SPEC_FACTS.items():
            if not callable(getattr(spec, attr, None)):
                problems.append(f"{name}: no {fact} ({attr} in python/tabula/reference/ops/{stem}.py)")
        if not callable(getattr(spec, "from_tosa", None)) and not (
                getattr(spec, "from_tosa", 0) is None and callable(getattr(spec, "fold_tosa", None))):
            problems.append(f"{name}: no TOSA reader (from_tosa in python/tabula/reference/ops/{stem}.py; for an op "
                            "that is no TOSA operator, from_tosa = None and a fold_tosa)")
        if not hasattr(spec, "bound"):
            problems.append(f"{name}: no accumulator bound (bound in python/tabula/reference/ops/{stem}.py; "
                            "declare bound = None for an op without an accumulator)")
        elif spec.bound is not None and not callable(spec.bound):
            problems.append(f"{name}: its accumulator bound is neither a function nor None")
        em = emitters.get(name)
        if em is None:
            problems.append(f"{name}: no codegen entry (python/tabula/codegen/ops/{stem}.py)")
        else:
            if em.__name__.rsplit(".", 1)[1] != stem:
                problems.append(f"{name}: codegen entry {em.__name__} is not named {stem}")
            if not (isinstance(getattr(em, "TEMPLATE", None), str) and callable(getattr(em, "context", None))):
                problems.append(f"{name}: codegen entry {em.__name__} has no TEMPLATE and context()")
            kernels = getattr(em, "KERNELS", None)
            if kernels is None:
                problems.append(f"{name}: no kernel list (KERNELS in {em.__name__})")
            elif not set(kernels) <= kernel_names:
                problems.append(f"{name}: kernel {', '.join(sorted(set(kernels) - kernel_names))} not in the manifest")
        if not any((d / f"test_{stem}.py").is_file() for d in tests_dirs):
            problems.append(f"{name}: no test (tests/ops/test_{stem}.py)")
    return problems


def test_every_ir_op_has_a_contract_a_reference_a_mac_count_a_bound_a_tosa_mapping_a_codegen_entry_a_kernel_and_a_test():
    assert ir.OPS and set(ir.OPS) == set(specs())
    from tabula import kernels as manifest

    kernels = set(manifest.names())
    assert op_fact_problems(specs(), OP_EMITTERS, kernels) == []
    # codegen's own fused ops call manifest kernels too
    for name, em in OP_EMITTERS.items():
        assert set(em.KERNELS) <= kernels, name


def _dummy_op(tests_dir: Path):
    """A spec and a codegen entry for a made-up op ``DUMMY`` with every fact, and its test file."""
    import types

    spec = types.ModuleType("tabula.reference.ops.dummy")
    spec.OP = "DUMMY"
    spec.contract = spec.run = spec.macs = spec.tosa = spec.from_tosa = lambda *a: None
    spec.bound = None
    em = types.ModuleType("tabula.codegen.ops.dummy")
    em.TEMPLATE, em.context, em.KERNELS = "", lambda *a: {}, ()
    (tests_dir / "test_dummy.py").write_text("")
    return spec, em


@pytest.mark.parametrize("fact,named", [("contract", "no contract"), ("run", "no reference run"),
                                        ("macs", "no MAC count"), ("bound", "no accumulator bound"),
                                        ("tosa", "no TOSA mapping"), ("from_tosa", "no TOSA reader"),
                                        ("codegen", "no codegen entry"),
                                        ("kernel", "not in the manifest"), ("test", "no test")])
def test_the_architecture_check_names_each_missing_fact_of_a_new_op(monkeypatch, tmp_path, fact, named):
    """A dummy op registered in the spec registry (monkeypatched) with every fact passes the check;
    without ``fact`` the check fails, naming the op and that fact."""
    import tabula.reference.ops as ops_pkg
    from tabula import kernels as manifest

    spec, em = _dummy_op(tmp_path)
    monkeypatch.setattr(ops_pkg, "_SPECS", {**specs(), "DUMMY": spec})
    emitters = {**OP_EMITTERS, "DUMMY": em}
    kernels = set(manifest.names())
    tests_dirs = (ROOT / "tests" / "ops", tmp_path)  # the dummy's test file is in tmp_path
    assert op_fact_problems(specs(), emitters, kernels, tests_dirs) == []  # complete: nothing to say
    if fact in ("contract", "run", "macs", "bound", "tosa", "from_tosa"):
        delattr(spec, fact)
    elif fact == "codegen":
        del emitters["DUMMY"]
    elif fact == "kernel":
        em.KERNELS = ("tabula_dummy_s8",)
    else:
        (tmp_path / "test_dummy.py").unlink()
    problems = op_fact_problems(specs(), emitters, kernels, tests_dirs)
    assert len(problems) == 1 and problems[0].startswith("DUMMY: ") and named in problems[0], problems


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> tabula modules it imports (module-level and inside functions alike)."""
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                if t.startswith("tabula"):
                    r = resolve(t)
                    if r and r != mod:
                        graph[mod].add(r)
    return graph


def test_the_package_has_no_import_cycle():
    graph = _import_graph()
    assert len(graph) > 50
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def strong(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    assert not cycles, f"import cycles: {cycles}"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})


def test_every_stage_imports_by_its_module_path():
    r = _python("import tabula.ir as ir, tabula.rules as rules, tabula.lowering.pipeline as p, "
                "tabula.quantizer.annotator as a, tabula.reference.interpreter as i, tabula.codegen.fusion as f, "
                "tabula.qmath.table16 as t; import tabula; "
                "assert callable(tabula.quantize) and callable(tabula.lower) and rules.TABLE and ir.OPS; print('ok')")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("module", ["tabula.lowering.pipeline", "tabula.ir", "tabula.codegen", "tabula.reference.interpreter"])
def test_lowering_and_later_stages_do_not_import_torchao(module):
    r = _python(f"import sys, {module}; print('torchao' in sys.modules)")
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def test_generated_c_calls_only_manifest_kernels_its_emitters_declare(digits_program, tmp_path):
    import re

    from tabula import kernels as manifest
    from tabula.codegen import generate
    from tabula.codegen.fusion import fuse_all
    from tabula.report.table_cases import CASES, table_op_graph

    graphs = [digits_program.graph, table_op_graph(next(c for c in CASES if c.function == "aten.tanh"), "int16")]
    for i, g in enumerate(graphs):
        res = generate(g, tmp_path / str(i))
        calls = set(re.findall(r"\b(tabula_\w+)\(", res.model_c.read_text())) - {"tabula_model_run", "tabula_model_input",
                                                                                   "tabula_model_output"}
        declared = {k for op in fuse_all(g).ops for k in OP_EMITTERS[op.op].KERNELS}
        assert calls and calls <= declared <= set(manifest.names()), (calls, declared)
