"""Real-world KQL from community repositories as a user clones them, for the KQL coverage
benchmark (`bench_kql_coverage.py --repo PATH`): the corpora the engine was never tuned on.

A repository is read from a work tree or a bare git directory (its HEAD). A query is:
- a `.kql` / `.csl` file, whole;
- a fenced block tagged `kql`, `kusto` or `KQL` in a Markdown file, or untagged when it pipes
  into an operator (`| where ...`: many repositories leave KQL untagged);
- the `query:` field of a YAML rule (Azure Sentinel's analytics and hunting layout).
Identical queries (after stripping the ends) are kept once. Nothing here is copied into the
project: the queries are read from the user's clone at run time.

    >>> text = "```KQL\\nT | take 1\\n```\\n```\\nT\\n| count\\n```\\n```\\npip x\\n```"
    >>> list(markdown_queries(text))
    ['T | take 1', 'T\\n| count']
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The community corpora measured (bench/README.md, "KQL coverage"): owner/name and the commit
# of the snapshot measured. `bench_kql_coverage.py --community DIR` reads each from
# DIR/owner+name/repo (the layout of a mirror) or DIR/name (a clone), where present.
COMMUNITY = (
    ("reprise99/Sentinel-Queries", "issue 28's first measure"),
    ("Bert-JanP/Hunting-Queries-Detection-Rules", "issue 28's first measure"),
    ("cyb3rmik3/KQL-threat-hunting-queries", "issue 28's first measure"),
    ("benscha/KQLAdvancedHunting", "issue 28, never used before its after-measure"),
    ("m4nbat/KustQueryLanguage_kql", "issue 28, never used before its after-measure"),
)


def community_paths(folder: Path) -> list[Path]:
    """The COMMUNITY repositories found under `folder` (a mirror's `owner+name/repo`, or a
    clone named `name`), in COMMUNITY's order."""
    found = []
    for repo, _ in COMMUNITY:
        owner, name = repo.split("/")
        for candidate in (folder / f"{owner}+{name}" / "repo", folder / name):
            if candidate.is_dir():
                found.append(candidate)
                break
    return found


_FENCE = re.compile(r"^```[ \t]*(kql|kusto|)[ \t]*\n(.*?)^```", re.I | re.M | re.S)
_PIPE = re.compile(r"^\s*\|\s*[a-z-]+\b", re.M)  # a tabular operator: `| where`
_SUFFIXES = (".kql", ".csl", ".md", ".yaml", ".yml")


def markdown_queries(text: str) -> Iterator[str]:
    """The KQL fenced blocks of a Markdown text."""
    for match in _FENCE.finditer(text):
        query = match.group(2).strip()
        if query and (match.group(1) or _PIPE.search(query)):
            yield query


def yaml_queries(text: str) -> Iterator[str]:
    """The `query:` field of a YAML rule (None when the file has none or is not YAML)."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    if isinstance(data, dict) and isinstance(data.get("query"), str) and data["query"].strip():
        yield data["query"].strip()


def queries_of(path: str, text: str) -> Iterator[str]:
    """The queries a file holds, by its kind."""
    lower = path.lower()
    if lower.endswith((".kql", ".csl")):
        if text.strip():
            yield text.strip()
    elif lower.endswith(".md"):
        yield from markdown_queries(text)
    elif lower.endswith((".yaml", ".yml")):
        yield from yaml_queries(text)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True
    ).stdout


def _files(repo: Path) -> tuple[str, Iterator[tuple[str, str]]]:
    """(commit, (path, text) of every candidate file) of a work tree or a bare git dir."""
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    is_git = (git_dir / "HEAD").is_file()
    commit = _git(git_dir, "rev-parse", "HEAD").strip() if is_git else ""
    if not is_git or git_dir != repo:  # a work tree: read the files as they are on disk

        def walk() -> Iterator[tuple[str, str]]:
            for path in sorted(repo.rglob("*")):
                if path.is_file() and path.suffix.lower() in _SUFFIXES and ".git" not in path.parts:
                    yield str(path.relative_to(repo)), path.read_text("utf-8", "replace")

        return commit, walk()

    def show() -> Iterator[tuple[str, str]]:
        names = _git(git_dir, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")
        for name in sorted(n for n in names if n.lower().endswith(_SUFFIXES)):
            blob = subprocess.run(
                ["git", f"--git-dir={git_dir}", "show", f"HEAD:{name}"],
                check=False, capture_output=True,
            )  # fmt: skip
            if blob.returncode == 0:
                yield name, blob.stdout.decode("utf-8", "replace")

    return commit, show()


def repo_queries(repo: Path, name: str | None = None) -> list[dict[str, Any]]:
    """Every distinct query of a repository, each with its provenance (`repo`, `commit`,
    `path`) and an `id` (`<name>:<n>`)."""
    name = name or repo.name.removesuffix(".git")
    commit, files = _files(repo)
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for path, text in files:
        for query in queries_of(path, text):
            if query in seen:
                continue
            seen.add(query)
            rows.append({"id": f"{name}:{len(rows)}", "repo": name, "commit": commit,
                         "path": path, "query": query})  # fmt: skip
    return rows
