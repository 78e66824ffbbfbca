"""Import contracts of the mcsa tree, checked from the source (no imports are executed).

The layering of DESIGN.md, stated as rules a reviewer would otherwise have to remember:

1. ``samplers`` (the core) imports no family: never ``rdp``, ``doeblin``, ``trf`` or ``experiments``.
2. The families import no other family and never ``experiments`` (experiments sit on top of them).
3. ``samplers.harness`` is the engine only: it imports no kind, model, family or core content
   (``samplers.problems``, ``samplers.models``, ``samplers.pruning``, ``samplers.estimators``,
   ``samplers.suites``, ``samplers.ais``, ``samplers.mcmc``); the families plug in through entry points.
4. ``benchmarks/`` never imports ``experiments``.
5. ``samplers.models`` (the models and their exact answers) sits at the bottom of the core, below the
   problems, estimators, suites, commands and engine: besides itself it imports only the core's foundations
   (``samplers._jit``, ``samplers._kernels``, ``samplers._dispatch``, ``samplers.rng``, ``samplers.validation``).
6. No circle among the modules of the installed packages (every import, lazy ones inside functions
   included, ``TYPE_CHECKING`` blocks excluded; a package ``__init__`` importing its own submodules is
   not an edge).

Run ``python .ci/contracts.py [ROOT]``: prints one line per violation and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("samplers", "rdp", "doeblin", "trf")
FAMILIES = ("rdp", "doeblin", "trf")
ENGINE = "samplers.harness"
MODELS = "samplers.models"
MODELS_ALLOWED = ("samplers.models", "samplers._jit", "samplers._kernels", "samplers._dispatch", "samplers.rng",
                  "samplers.validation")
ENGINE_FORBIDDEN = ("samplers.problems", "samplers.models", "samplers.pruning", "samplers.estimators",
                    "samplers.suites", "samplers.ais", "samplers.mcmc")


@dataclass(frozen=True)
class Import:
    """One import statement: the importing module, the imported module and where it stands."""

    source: str
    target: str
    path: str
    line: int


def module_name(root: Path, path: Path) -> str:
    """Dotted module name of ``path`` relative to ``root`` (``pkg/__init__.py`` -> ``pkg``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(root: Path, path: Path) -> list[Import]:
    """Every import statement of one file, resolved to absolute module names.

    ``from pkg import name`` yields ``pkg.name`` (a submodule or an attribute: both tie the file to
    ``pkg``'s layer); imports inside functions count, those under ``if TYPE_CHECKING:`` do not.
    """
    module = module_name(root, path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(module, alias.name, str(path), child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, is_package, child.level, child.module)
                for alias in child.names:
                    target = f"{base}.{alias.name}" if alias.name != "*" else base
                    found.append(Import(module, target, str(path), child.lineno))
            visit(child)

    visit(tree)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def python_files(root: Path, top: str) -> list[Path]:
    """The ``.py`` files under ``root/top`` (none if it does not exist)."""
    base = root / top
    return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts) if base.exists() else []


def _cycles(modules: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _without_init_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {src: {t for t in targets if not _within(t, src)} for src, targets in edges.items()}


def check(root: Path) -> list[str]:
    """Every contract violation under ``root``, one readable line each (empty when the tree keeps them)."""
    violations: list[str] = []
    package_imports: list[Import] = []
    for package in PACKAGES:
        for path in python_files(root, package):
            package_imports.extend(imports_of(root, path))

    for imp in package_imports:
        where = f"{imp.path}:{imp.line}: {imp.source} imports {imp.target}"
        if _within(imp.source, "samplers"):
            if any(_within(imp.target, f) for f in (*FAMILIES, "experiments")):
                violations.append(f"{where} (samplers must not import a family or experiments)")
            if _within(imp.source, ENGINE) and any(_within(imp.target, f) for f in ENGINE_FORBIDDEN):
                violations.append(f"{where} (the harness engine must not import kinds, models or content)")
            if (_within(imp.source, MODELS) and _within(imp.target, "samplers")
                    and not any(_within(imp.target, f) for f in MODELS_ALLOWED)):
                violations.append(f"{where} (samplers.models imports only the core's foundations)")
        else:
            family = imp.source.split(".")[0]
            others = [f for f in (*FAMILIES, "experiments") if f != family]
            if any(_within(imp.target, f) for f in others):
                violations.append(f"{where} (a family must not import another family or experiments)")

    for path in python_files(root, "benchmarks"):
        for imp in imports_of(root, path):
            if _within(imp.target, "experiments"):
                violations.append(f"{imp.path}:{imp.line}: {imp.source} imports {imp.target} "
                                  "(benchmarks must not import experiments)")

    modules = {module_name(root, p) for package in PACKAGES for p in python_files(root, package)}
    edges: dict[str, set[str]] = {}
    for imp in package_imports:
        target = imp.target
        while target and target not in modules:      # `from pkg import name`: name may be an attribute
            target = target.rpartition(".")[0]
        if target and target != imp.source:
            edges.setdefault(imp.source, set()).add(target)
    # a package's __init__ importing its own submodules is how packages are built; only circles that
    # remain once those edges are ignored are real
    for component in _cycles(modules, _without_init_edges(edges)):
        violations.append("import circle: " + " <-> ".join(component))
    return violations


def main(argv: list[str] | None = None) -> int:
    """Check the tree at ``argv[0]`` (default: the repository root); print violations; 0 if none."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    violations = check(root)
    for line in violations:
        print(line)
    if violations:
        print(f"{len(violations)} import-contract violation(s)")
        return 1
    print("import contracts kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
