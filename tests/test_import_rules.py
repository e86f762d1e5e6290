"""The data flows one way — campaign -> runner -> targets -> probe -> store -> analysis -> report — and
the imports say so: each module belongs to a stage, a stage imports only the stages it is allowed to,
no import (module-level, inside a function or under TYPE_CHECKING) closes a cycle, and no module
loads another by name at run time, except the one place that finds the folders of the benchmark kinds
and of the loads (rtvbench.folders); the imports it makes for a stage are followed as if written out.

Also pinned here: no generic module names a benchmark kind; a kind's name and its modules appear
only in its own folder, rtvbench/kinds/<kind>/.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rtvbench"

# Which stage each module is in, by the longest matching module-name prefix (a kind's modules by
# their file name: params.py is campaign stage, decode.py analysis, section.py report).
STAGE_OF_PREFIX = {
    "rtvbench": "base",                      # __init__, errors, params, registry, catalog, results, spec ...
    "rtvbench.kinds": "base",                # the finder of the kinds' folders
    "rtvbench.probe": "probe",
    "rtvbench.targets": "targets",
    "rtvbench.loads": "loads",
    "rtvbench.benchmarks": "benchmarks",
    "rtvbench.campaign": "campaign",
    # A pure check of the resolved spec against the fingerprints: the runner prints it before a run, the
    # evaluation repeats it with what the measurements observed.
    "rtvbench.preflight": "base",
    "rtvbench.store": "store",
    "rtvbench.migrations": "store",
    # Puts runs into the store: measured (with the thermal sampler and health checks beside) or imported.
    "rtvbench.runner": "runner",
    "rtvbench.analysis": "analysis",
    "rtvbench.run_analyses": "base",         # the finder of the run analyses' folders, their empty __init__s
    "rtvbench.report": "report",
    # The static site over a store: the histories and change points (analysis) and each run's report.
    "rtvbench.publish": "publish",
    "rtvbench.cli": "cli",
    "rtvbench.__main__": "cli",
    "rtvbench.manpage": "cli",               # rtvbench(1), written from the CLI's commands at build time
}
# names.py: a kind's figure names, a leaf its campaign stage (requirements) and its decoder both read;
# keys.py: its campaign keys as a model, which its campaign stage validates and its decoder and section read;
# formats.py: the parsers of an external tool's output, a leaf its campaign stage (format and figure
# names), the runner (through the kind's params), `rtvbench import` and its decoder all read.
KIND_MODULE_STAGE = {"params": "benchmarks", "decode": "analysis", "section": "report", "names": "base",
                     "formats": "base", "json_paths": "base", "keys": "base"}
# A load folder's modules: params.py (its keys and how it starts) and achieved.py (its figures).
LOAD_MODULE_STAGE = {"params": "loads", "achieved": "analysis"}
# A run analysis's folder: analysis.py (its part of the evaluation) and section.py (its words).
RUN_ANALYSIS_MODULE_STAGE = {"analysis": "analysis", "section": "report"}
FOLDER_PACKAGES = ("rtvbench.kinds", "rtvbench.loads", "rtvbench.run_analyses")

# What each stage may import besides itself. Analysis and report read stored runs (results, spec)
# and never the store, the runner or a target; the campaign stage never reads analysis or the store.
ALLOWED = {
    "base": set(),
    "probe": {"base"},
    "targets": {"base", "probe"},
    "loads": {"base", "probe", "targets"},
    "benchmarks": {"base", "probe", "targets", "loads"},
    "campaign": {"base", "probe", "targets", "loads", "benchmarks"},
    "store": {"base", "probe", "targets", "loads", "benchmarks"},
    "runner": {"base", "probe", "targets", "loads", "benchmarks", "campaign", "store"},
    "analysis": {"base"},
    # The report reads the evaluation only (test_the_report_computes_no_analysis).
    "report": {"base", "analysis"},
    "publish": {"base", "analysis", "report"},
    "cli": {"base", "probe", "targets", "loads", "benchmarks", "campaign", "store", "runner", "analysis", "report",
            "publish"},
}
DYNAMIC_IMPORT_ALLOWED = {"rtvbench.folders"}    # discovery of the kinds' and the loads' folders


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def stage(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 4 and parts[:2] == ["rtvbench", "kinds"]:
        if parts[3] in KIND_MODULE_STAGE:
            return KIND_MODULE_STAGE[parts[3]]
        return "analysis"                # helpers of a kind's decoder (names, considerations ...)
    if len(parts) == 4 and parts[:2] == ["rtvbench", "loads"] and parts[3] in LOAD_MODULE_STAGE:
        return LOAD_MODULE_STAGE[parts[3]]
    if len(parts) == 4 and parts[:2] == ["rtvbench", "run_analyses"] and parts[3] in RUN_ANALYSIS_MODULE_STAGE:
        return RUN_ANALYSIS_MODULE_STAGE[parts[3]]
    if module == "rtvbench.loads":
        return "base"                    # the finder of the loads' folders; their modules are in stages
    for n in range(len(parts), 1, -1):
        prefix = ".".join(parts[:n])
        if prefix in STAGE_OF_PREFIX:
            return STAGE_OF_PREFIX[prefix]
    if len(MODULES[module].relative_to(PACKAGE).parts) == 1:
        return "base"                    # a top-level module not named above: a leaf every stage may use
    raise AssertionError(f"no stage for {module}")


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def imports(module: str, with_folders: bool = True) -> list[tuple[str, int]]:
    """(imported rtvbench module, line) for every import anywhere in the module's file, and (with_folders)
    every folder module a registry's `load(stage)` call imports."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(module).split(".")
                base = ".".join(pkg[:len(pkg) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if sub in MODULES else base, node.lineno))
    if with_folders:
        out += _folder_stage_imports(module, tree)
    return [(m, line) for m, line in out if m.split(".")[0] == "rtvbench" and m in MODULES]


def _folder_stage_imports(module: str, tree: ast.AST) -> list[tuple[str, int]]:
    """What `load("decode")` (imported from rtvbench.kinds or rtvbench.loads, under any name) imports:
    that stage's module of every folder of the package."""
    finders = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FOLDER_PACKAGES:
            finders |= {a.asname or a.name: node.module for a in node.names if a.name == "load"}
    if module in FOLDER_PACKAGES:
        finders["load"] = module
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in finders
                and node.args and isinstance(node.args[0], ast.Constant)):
            package = finders[node.func.id]
            folder = ROOT.joinpath(*package.split("."))
            out += [(f"{package}.{d.name}.{node.args[0].value}", node.lineno) for d in sorted(folder.iterdir())
                    if (d / f"{node.args[0].value}.py").exists()]
    return out


def test_every_module_has_a_stage():
    assert {m: stage(m) for m in MODULES}


def test_no_stage_imports_one_it_may_not():
    wrong = []
    for m in MODULES:
        for target, line in imports(m):
            a, b = stage(m), stage(target)
            if a != b and b not in ALLOWED[a]:
                wrong.append(f"{MODULES[m].relative_to(ROOT)}:{line}: {a} stage imports {target} ({b} stage)")
    assert not wrong, "\n".join(wrong)


# What the report stage may take from analysis modules besides the evaluation: their types (classes)
# and constants, and these functions, which word or name a figure rather than compute one.
REPORT_WORDING = {"describe_all", "no_record_words", "definition_words", "busy_text", "cpu_figure", "split_cpu",
                  "figure_unit", "p_heading", "p_text"}


def _definitions(module: str) -> dict[str, str]:
    """Each top-level name of a module: "class", "function" or "constant"."""
    out = {}
    for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = "function"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update({t.id: "constant" for t in targets if isinstance(t, ast.Name)})
    return out


def stage_of_run_analysis(module: str | None) -> str | None:
    """A run analysis's module's stage (rtvbench/run_analyses/<name>/), else None."""
    return stage(module) if (module or "").startswith("rtvbench.run_analyses.") and module in MODULES else None


def test_the_report_computes_no_analysis():
    """Every format renders the one Evaluation, so no two formats can disagree: the report stage calls no
    analysis function (evaluate_run computes everything once), it only reads the evaluation and words it."""
    wrong = []
    for m in MODULES:
        if stage(m) != "report":
            continue
        for node in ast.walk(ast.parse(MODULES[m].read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and ((node.module or "").startswith("rtvbench.analysis")
                                                          or stage_of_run_analysis(node.module) == "analysis")):
                continue
            if node.module == "rtvbench.analysis":
                names = [a.name for a in node.names]        # whole modules
            elif node.module == "rtvbench.analysis.evaluation":
                names = [a.name for a in node.names if a.name == "evaluate_run" and m != "rtvbench.report"]
            else:
                kinds = _definitions(node.module)
                names = [a.name for a in node.names
                         if kinds.get(a.name) == "function" and a.name not in REPORT_WORDING]
            wrong += [f"{MODULES[m].relative_to(ROOT)}:{node.lineno}: calls {node.module}.{n}" for n in names]
    assert not wrong, "\n".join(wrong)


def test_the_report_does_not_run_the_preflight_check():
    """preflight is a leaf every stage may import, but the report takes its warnings from the
    evaluation, which repeats the check once with what the measurements observed."""
    wrong = [f"{MODULES[m].relative_to(ROOT)}:{line}" for m in MODULES if stage(m) == "report"
             for target, line in imports(m) if target == "rtvbench.preflight"]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    # A registry loads its folders on first lookup, once its own module is imported, and the folders'
    # modules import the registry's types: that is what a registry is, so those edges are left out here
    # (the stage rules above do follow them).
    graph = {m: {t for t, _ in imports(m, with_folders=False) if t != m} for m in MODULES}
    seen, stack, cycles = set(), [], []

    def visit(m: str) -> None:
        if m in stack:
            cycles.append(" -> ".join(stack[stack.index(m):] + [m]))
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for t in sorted(graph[m]):
            visit(t)
        stack.pop()

    for m in sorted(graph):
        visit(m)
    assert not cycles, "\n".join(cycles)


def test_no_module_is_imported_by_name_at_run_time():
    found = []
    for m, path in MODULES.items():
        if m in DYNAMIC_IMPORT_ALLOWED:
            continue
        text = path.read_text(encoding="utf-8")
        for word in ("import_module", "__import__", "TYPE_CHECKING"):
            if word in text:
                found.append(f"{path.relative_to(ROOT)}: {word}")
    assert not found, "\n".join(found)


KIND_FOLDERS = sorted(p.name for p in (PACKAGE / "kinds").iterdir() if (p / "__init__.py").exists())


def _kind_names() -> set[str]:
    names = set()
    for folder in KIND_FOLDERS:
        text = (PACKAGE / "kinds" / folder / "params.py").read_text(encoding="utf-8")
        names |= set(re.findall(r'BENCHMARKS\.register\("([^"]+)"\)', text))
    return names


def _load_kind_names() -> set[str]:
    names = set()
    for path in (PACKAGE / "loads").glob("*/params.py"):
        names |= set(re.findall(r'\bregister\("([^"]+)"', path.read_text(encoding="utf-8")))
    return names


def test_no_generic_module_names_a_kind():
    names = _kind_names()
    assert len(names) == len(KIND_FOLDERS) >= 7
    # A benchmark kind named like a load kind (`command`): the word is that load's own, and a key and
    # a store column, in generic modules, so a literal of it cannot tell the benchmark kind apart.
    names -= _load_kind_names()
    # The `network` benchmark kind shares its word with the qemu environments' key `network` (a guest's
    # NIC), which generic target code writes: a literal of it cannot tell the benchmark kind apart.
    names -= {"network"}
    # A quoted name, unless it is a path component (`root / "boot"`: a directory, not the kind).
    literal = re.compile("|".join(rf'(?<!/ )["\']{re.escape(n)}["\']' for n in names))
    module = re.compile(r"rtvbench\.kinds\.(" + "|".join(KIND_FOLDERS) + r")\b")
    found = []
    for m, path in MODULES.items():
        parts = m.split(".")
        own = parts[1:2] == ["kinds"] and len(parts) > 2 and parts[2]
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for hit in literal.findall(line) + [x for x in module.findall(line) if x != own]:
                if not own:
                    found.append(f"{path.relative_to(ROOT)}:{i}: {hit}")
            if own and [x for x in module.findall(line) if x != own]:
                found.append(f"{path.relative_to(ROOT)}:{i}: another kind's module")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("folder", KIND_FOLDERS)
def test_a_kind_folder_has_its_campaign_and_analysis_stages(folder):
    here = PACKAGE / "kinds" / folder
    assert (here / "params.py").exists() and (here / "decode.py").exists()


def test_every_run_analysis_is_in_the_report_order_with_both_stages():
    """A run analysis's folder is found by its line in run_analyses.ORDER: one left out would be
    computed by nobody and shown nowhere."""
    from rtvbench import run_analyses

    assert sorted(run_analyses.ORDER) == run_analyses.on_disk()
    for folder in run_analyses.ORDER:
        here = PACKAGE / "run_analyses" / folder
        assert (here / "analysis.py").exists() and (here / "section.py").exists(), folder


def test_library_code_prints_nothing():
    """Only the CLI talks to the user (library code logs on the `rtvbench` logger, which the CLI
    prints) and the supervisors, programs of their own whose stdout is their protocol."""
    programs = {"rtvbench.cli", "rtvbench.targets.local_supervisor", "rtvbench.targets.qemu.netns_supervisor"}
    found = []
    for m, path in MODULES.items():
        if m in programs:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (isinstance(node, ast.Attribute) and node.attr == "write" and isinstance(node.value, ast.Attribute)
                    and node.value.attr in ("stdout", "stderr")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "\n".join(found)
