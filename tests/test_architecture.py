"""The architecture keeps one source per fact: every IR op is one spec with a codegen entry, a kernel
and a test; the package imports by stage name without cycles; the lowering needs no torchao."""
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


def test_every_ir_op_has_a_contract_a_reference_a_codegen_entry_a_kernel_and_a_test():
    assert ir.OPS and set(ir.OPS) == set(specs())
    from tabula import kernels as manifest

    kernels = set(manifest.names())
    for name, spec in specs().items():
        stem = spec.__name__.rsplit(".", 1)[1]
        assert callable(spec.contract) and callable(spec.run), name
        em = OP_EMITTERS.get(name)
        assert em is not None, f"{name}: no python/tabula/codegen/ops/{stem}.py"
        assert em.__name__.rsplit(".", 1)[1] == stem, f"{name}: codegen module {em.__name__} is not named {stem}"
        assert isinstance(em.TEMPLATE, str) and callable(em.context)
        assert set(em.KERNELS) <= kernels, f"{name}: kernels {sorted(set(em.KERNELS) - kernels)} are not in the manifest"
        assert (ROOT / "tests" / "ops" / f"test_{stem}.py").is_file(), f"{name}: no tests/ops/test_{stem}.py"
    # codegen's own fused ops call manifest kernels too
    for name, em in OP_EMITTERS.items():
        assert set(em.KERNELS) <= kernels, name


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
