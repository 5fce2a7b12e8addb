"""The documentation's programs run as written, and the documentation reads as documentation.

Every ```python block of README.md and docs/*.md is a complete program: each is written to an
empty temporary folder and run there as a subprocess with this interpreter, and must exit 0.
A ```text block that follows a program with nothing but blank lines between them is that
program's output: the program's stdout must equal it. A program that names a PostgreSQL URL
reads the database URL from ``$OPENCLAW_FTS_DB`` (with a documented default); it runs in the
suite's PostgreSQL half, against a fresh database on the session's throwaway server (skipped,
or failed where PostgreSQL is required, exactly like the other PostgreSQL tests). Fragments
that are not complete programs use another fence (```text, ```sh, ```ini, ```toml).

Also checked: README.md stays a front door (at most :data:`README_MAX_LINES` lines), no page
carries work-log words (issue numbers, commit hashes, "today's", "second round"), and every
module path the README and docs/architecture.md name exists in the package.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "openclaw_fts"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The README is a front door; everything longer belongs in docs/.
README_MAX_LINES = 400
#: A documentation program gets this long to finish (they are small, but the machine is shared).
PROGRAM_TIMEOUT_S = 240
#: The environment variable a PostgreSQL program reads its URL from (the command line's too).
DB_ENV_VAR = "OPENCLAW_FTS_DB"

FENCE_RE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
POSTGRESQL_URL_RE = re.compile(r"postgresql(\+\w+)?://")
WORK_LOG_RE = re.compile(
    r"issue #[0-9]|\(commit [0-9a-f]{7}|today's|second round|third round"
    r"|\btoday\b|this round|(?<![&\w])#[0-9]{1,4}\b",
    re.IGNORECASE,
)
#: A bare commit hash: 7-40 hex digits with at least one digit and one letter (so neither a
#: number nor a word such as "deadbeef" or "facade" is taken for one), not part of a UUID or
#: another hyphenated name (a session id such as ``e8b05d3c-7a21-…`` is not a commit).
COMMIT_HASH_RE = re.compile(
    r"(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"
)
#: Module paths as pages name them: ``store.py``, ``index/sqlite/read.py``, ``index/sqlite/``.
MODULE_PATH_RE = re.compile(r"(?<![\w/.-])((?:index/)?[a-z_]+(?:/[a-z_]+)*(?:\.py|/))(?![\w/])")


@dataclass(frozen=True)
class Program:
    page: Path
    line: int
    source: str
    output: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def needs_postgresql(self) -> bool:
        return POSTGRESQL_URL_RE.search(self.source) is not None


def programs(page: Path) -> list[Program]:
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE_RE.finditer(text))
    found = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        output = None
        if i + 1 < len(fences):
            nxt = fences[i + 1]
            if nxt.group(1) == "text" and not text[fence.end() : nxt.start()].strip():
                output = nxt.group(2)
        line = text.count("\n", 0, fence.start()) + 1
        found.append(Program(page, line, fence.group(2), output))
    return found


ALL_PROGRAMS = [p for page in PAGES for p in programs(page)]
SQLITE_PROGRAMS = [p for p in ALL_PROGRAMS if not p.needs_postgresql]
POSTGRESQL_PROGRAMS = [p for p in ALL_PROGRAMS if p.needs_postgresql]


def run_program(program: Program, cwd: Path, db_url: str | None) -> None:
    script = cwd / "program.py"
    script.write_text(program.source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != DB_ENV_VAR}
    if db_url is not None:
        env[DB_ENV_VAR] = db_url
    done = subprocess.run(
        [sys.executable, script.name],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"{program.name} exited {done.returncode}\n--- stdout\n{done.stdout}"
        f"\n--- stderr\n{done.stderr}"
    )
    if program.output is not None:
        assert done.stdout.strip() == program.output.strip(), (
            f"{program.name} printed something else than the page's output block"
        )


def test_the_pages_hold_programs() -> None:
    """The collection below is not empty by accident (a broken fence pattern would be)."""
    readme = [p for p in ALL_PROGRAMS if p.page.name == "README.md"]
    assert len(readme) >= 3
    assert any(p.output is not None for p in readme)
    assert POSTGRESQL_PROGRAMS


@pytest.mark.parametrize("program", SQLITE_PROGRAMS, ids=lambda p: p.name)
def test_program_runs_as_written(program: Program, tmp_path: Path) -> None:
    run_program(program, tmp_path, None)


@pytest.mark.parametrize("program", POSTGRESQL_PROGRAMS, ids=lambda p: p.name)
def test_postgresql_program_runs_as_written(program: Program, tmp_path: Path, pg_url: str) -> None:
    assert DB_ENV_VAR in program.source, (
        f"{program.name} names a PostgreSQL URL but does not read ${DB_ENV_VAR}"
    )
    run_program(program, tmp_path, pg_url)


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_work_log_words(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [m.group(0) for m in WORK_LOG_RE.finditer(text)]
    found += [m.group(0) for m in COMMIT_HASH_RE.finditer(text)]
    assert not found, f"{page.name} reads like a work log: {found[:10]}"


def _exists_in_package(path: str) -> bool:
    if (PACKAGE / path).exists():
        return True
    name = path.rstrip("/")
    return any(f"/{p.relative_to(PACKAGE)}".endswith(f"/{name}") for p in PACKAGE.rglob("*"))


@pytest.mark.parametrize("name", ["README.md", "docs/architecture.md"])
def test_the_architecture_names_modules_that_exist(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    named = {m.group(1) for m in MODULE_PATH_RE.finditer(text)}
    named = {p for p in named if p.endswith(".py") or p.startswith("index/")}
    assert named, f"{name} names no module"
    missing = sorted(p for p in named if not _exists_in_package(p))
    assert not missing, f"{name} names modules the package does not have: {missing}"


def test_the_benchmarks_page_is_generated(tmp_path: Path) -> None:
    """bench/RESULTS.md and docs/benchmarks.md are what ``python -m bench.table --docs``
    writes from the results."""
    out = tmp_path / "RESULTS.md"
    filters_out = tmp_path / "benchmarks.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench.table", "--docs", str(out), str(filters_out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == (ROOT / "bench" / "RESULTS.md").read_text(
        encoding="utf-8"
    ), "bench/RESULTS.md differs from the results: run `python -m bench.table --docs`"
    assert filters_out.read_text(encoding="utf-8") == (ROOT / "docs" / "benchmarks.md").read_text(
        encoding="utf-8"
    ), "docs/benchmarks.md differs from the results: run `python -m bench.table --docs`"


#: A layer's label starts a line of the README's picture; module names follow it.
LAYER_LABEL_RE = re.compile(r"^ (\S[^ ]*(?: [a-z]+)?) {2,}")
PICTURE_MODULE_RE = re.compile(r"(?<![\w/])(index/|testing/|redact/|[a-z_]+\.py)")


def readme_layers() -> list[set[str]]:
    """The README picture's layers, top first, as sets of dotted module prefixes."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    picture = next(
        f.group(2)
        for f in FENCE_RE.finditer(text)
        if f.group(1) == "text" and "faces" in f.group(2)
    )
    layers: list[set[str]] = []
    for line in picture.splitlines():
        if LAYER_LABEL_RE.match(line):
            layers.append(set())
        for name in PICTURE_MODULE_RE.findall(line):
            if layers:
                layers[-1].add("openclaw_fts." + name.removesuffix(".py").rstrip("/"))
    return layers


def _imports(path: Path, module: str) -> set[str]:
    """Every plugin module ``path`` imports (lazy and type-checking imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found |= {f"{target}.{alias.name}" for alias in node.names} | {target}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("openclaw_fts.")}


def _layer_of(module: str, layers: list[set[str]]) -> int | None:
    for index, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return index
    return None


def test_the_readme_picture_is_the_import_graph() -> None:
    """Every module of the package is in the picture, and none imports a layer above its own."""
    layers = readme_layers()
    assert len(layers) >= 4
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "migrations" or relative == Path("__init__.py"):
            continue
        module = ".".join(["openclaw_fts", *relative.with_suffix("").parts])
        module = module.removesuffix(".__init__")
        mine = _layer_of(module, layers)
        assert mine is not None, f"README's picture does not show {module}"
        for target in _imports(path, module):
            theirs = _layer_of(target, layers)
            if theirs is not None and theirs < mine:
                upward.append(f"{module} imports {target}")
    assert not upward, "README's picture puts these imports upward:\n" + "\n".join(upward)


#: A name the pages cite in code: ``openclaw_fts.engine.write_engine``, or ``module.CONSTANT``.
QUALIFIED_NAME_RE = re.compile(r"\bopenclaw_fts(?:\.[A-Za-z_]\w*)+")
CONSTANT_NAME_RE = re.compile(r"(?<![\w.])((?:[a-z_]+\.)+)([A-Z][A-Z0-9_]{2,})\b")


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_names_the_pages_cite_exist(page: Path) -> None:
    """``openclaw_fts.x.y`` and ``module.CONSTANT`` in a page name something the package has."""
    text = page.read_text(encoding="utf-8")
    # (``openclaw_fts.sqlite`` is the command line's default database file, not a module)
    cited = {n for n in QUALIFIED_NAME_RE.findall(text) if not n.endswith(".sqlite")}
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {"index"}
    for prefix, name in CONSTANT_NAME_RE.findall(text):
        if prefix.split(".")[0] in modules:
            cited.add(f"openclaw_fts.{prefix}{name}")
    missing = sorted(name for name in cited if not _resolves(name))
    assert not missing, f"{page.name} cites names the package does not have: {missing}"


def test_the_module_map_shows_every_module() -> None:
    """docs/architecture.md's module map names every module of the package."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
        and "migrations" not in path.relative_to(PACKAGE).parts
        and f"`{path.name}`" not in text
        and f"`{path.relative_to(PACKAGE)}`" not in text
    )
    assert not missing, f"docs/architecture.md's module map does not show {missing}"


def test_the_readme_points_to_every_page() -> None:
    """Each page of docs/ has its line in the README's documentation list."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = sorted(
        page.name
        for page in (ROOT / "docs").glob("*.md")
        if f"* [docs/{page.name}](docs/{page.name})" not in text
    )
    assert not missing, f"README.md's documentation list does not point to {missing}"


#: A file path a page cites: ``tests/test_crash.py``, ``openclaw_fts/folders.py``, ``env.py`` (a
#: bare name other than a module, such as an example's ``hits.json``, is not taken for one).
FILE_PATH_RE = re.compile(
    r"(?<![\w/.<>*-])((?:[\w.-]+/)+[\w-]+\.(?:py|sh|md|toml|ini|json)|[\w-]+\.py)\b"
)


def _repository_files() -> list[str]:
    skip = {".venv", ".git", "__pycache__", "node_modules", ".mypy_cache", ".ruff_cache"}
    return [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_files_the_pages_cite_exist(page: Path) -> None:
    """A path a page names is a file of the repository (relative to it, or a package module)."""
    files = _repository_files()
    text = page.read_text(encoding="utf-8")
    cited = {m.group(1) for m in FILE_PATH_RE.finditer(text)}
    missing = sorted(
        name
        for name in cited
        if not (ROOT / name).exists()
        and not (page.parent / name).exists()
        and not any(f == name or f.endswith("/" + name) for f in files)
    )
    assert not missing, f"{page.name} cites files the repository does not have: {missing}"


#: A link to a section of a page: ``](performance.md#writes)`` or ``](#reproducing)``.
SECTION_LINK_RE = re.compile(r"\]\(((?:[\w\-]+\.md)?)#([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces
    as hyphens)."""
    text = page.read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_section_links_reach_a_heading(page: Path) -> None:
    """Every ``page.md#section`` link (the goals table of bench/RESULTS.md links the
    profiles in bench/NOTES.md) lands on a heading that exists."""
    broken = []
    for target, anchor in SECTION_LINK_RE.findall(page.read_text(encoding="utf-8")):
        linked = page.parent / target if target else page
        if not linked.is_file() or anchor not in _anchors(linked):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{page.name} links sections that do not exist: {broken}"
